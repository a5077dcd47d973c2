/* search.js — a surrogate search's progress (sweeps with "search": sweeps/README.md "Search", docs/SEARCH.md): the
 * Search panel above the leaderboard, in the words of `prism-sweep status` (orchestrator/search.c
 * search_summary_text): the settings and progress line, the recommended schedule with the model's mean ± sd, the
 * predicted best untrained one with P(beat by δ), the fit (leave-one-out and held-out errors); a chart of the
 * recommendation against the schedules trained, one point per decided batch with a ± sd band, so the search is seen
 * converging; and the leaderboard's "model Δ" column (each trained row's surrogate mean ± sd, the recommended row
 * marked). Means are Δ vs the uniform baseline, as the server sends them; a sweep without "search" shows none of it.
 */
'use strict';

import { $, css, esc, fmt, fmtSigned, isNum, num, parseHeads, rle, setHTML, trainWords, withAlpha } from './util.js';
import { S } from './state.js';
import { chartNote, chartsAvailable, lineOptions } from './charts.js';

/* the leaderboard's `search` object, defaults filled; null for a sweep without one */
export function normSearch(x) {
  if (!x || typeof x !== 'object') return null;
  const est = (e) => (e && typeof e === 'object' && typeof e.heads === 'string'
    ? { heads: parseHeads(e.heads), mean: num(e.mean), sd: num(e.sd), train: e.train && typeof e.train === 'object' ? e.train : null } : null);
  const dims = x.dims && typeof x.dims === 'object' ? Object.keys(x.dims).map((k) => ({ key: k, min: num(x.dims[k].min),
    max: num(x.dims[k].max), scale: String(x.dims[k].scale || ''), baseline: num(x.dims[k].baseline) })) : [];
  const fit = x.fit && typeof x.fit === 'object' ? { n: num(x.fit.n), loo_rmse: num(x.fit.loo_rmse),
    loo_z_rms: num(x.fit.loo_z_rms), heldout_n: num(x.fit.heldout_n) || 0, heldout_rmse: num(x.fit.heldout_rmse) } : null;
  return { budget: num(x.budget), batch: num(x.batch), init: num(x.init), delta: num(x.delta), stop_p: num(x.stop_p),
    space: num(x.space), schedules: num(x.schedules), trained: num(x.trained), decided: num(x.batches_decided) || 0,
    finished: !!x.finished, stop_reason: typeof x.stop_reason === 'string' ? x.stop_reason : null,
    dims, as_of: num(x.as_of_batch), rec: est(x.recommended), untrained: est(x.predicted_best_untrained), p_beat: num(x.p_beat), fit,
    batches: (Array.isArray(x.batches) ? x.batches : []).map((b) => ({ batch: num(b.batch), trained: num(b.trained),
      proposed: num(b.proposed), rec: typeof b.recommended === 'string' ? parseHeads(b.recommended) : null,
      mean: num(b.recommended_mean), sd: num(b.recommended_sd), p_beat: num(b.p_beat) })) };
}
/* a row's surrogate: {mean, sd, lo, hi, batch}, or null (not trained yet, or no batch decided) */
export function normSurrogate(x) {
  return x && typeof x === 'object' ? { mean: num(x.mean), sd: num(x.sd), lo: num(x.lo), hi: num(x.hi), batch: num(x.batch) } : null;
}

const SEARCH_STOPS = { budget: 'the budget is spent', space: 'no untrained schedule left' };
export const isRecommended = (r) => !!(S.board && S.board.search && S.board.search.rec && r.heads.join(',') === S.board.search.rec.heads.join(',') &&
  trainWords(r.train) === trainWords(S.board.search.rec.train));
/* " at lr=0.0012" after a candidate's schedule, in a span of its own (id-train) for the tests */
const trainAt = (t, id) => (t ? ' at <span id="' + id + '-train">' + esc(trainWords(t)) + '</span>' : '');
/* "−0.01234 ± 0.00100" (5 decimals, as the status text), each number in its own span for the tests */
const meanSd = (m, sd, id) => '<span class="sm"' + (id ? ' id="' + id + '-mean"' : '') + '>' + fmtSigned(m, 5) + '</span> <span class="pm">± <span' +
  (id ? ' id="' + id + '-sd"' : '') + '>' + fmt(sd, 5) + '</span></span>';
const headsSpan = (h, id) => '<span class="rle" id="' + id + '" data-heads="' + esc(h.join(',')) + '" title="' + esc(h.join(',')) + '">' + esc(rle(h)) + '</span>';

function searchText(g) {
  const n = (id, v) => '<span id="' + id + '">' + esc(isNum(v) ? v : '—') + '</span>';
  let html = '<p id="search-line">search (surrogate; budget ' + n('search-budget', g.budget) + ' schedules, init ' + n('search-init', g.init) +
    ', batch ' + n('search-batch', g.batch) + '; ' + n('search-space', g.space) + ' valid schedules): ' + n('search-decided', g.decided) +
    ' batch(es) decided, ' + n('search-schedules', g.schedules) + ' schedules in the sweep, ' + n('search-trained', g.trained) + ' trained' +
    (g.finished ? '; <span id="search-finished" data-reason="' + esc(g.stop_reason || '') + '">finished (' +
      esc(SEARCH_STOPS[g.stop_reason] || 'no untrained schedule is likely to beat the recommended: P(beat) < stop_p ' + fmt(g.stop_p, 3)) + ')</span>'
      : ' <span class="muted">(running: the next batch is decided when every job of the sweep is over)</span>') + '</p>';
  if (g.dims.length)
    html += '<p id="search-dims">searched with the schedule: ' + g.dims.map((d) => 'train.' + esc(d.key) + ' in [' + esc(String(d.min)) + ', ' +
      esc(String(d.max)) + '] (' + esc(d.scale) + ' scale; the baseline at ' + esc(String(d.baseline)) + ')').join('; ') + '</p>';
  html += g.rec
    ? '<p id="search-rec" title="the trained schedule with the lowest model mean: less exposed to the winner\'s curse than the lowest raw estimate">' +
      '<span class="search-star">★</span> recommended (lowest model mean among the trained, as of batch ' + esc(g.as_of) + '): ' +
      headsSpan(g.rec.heads, 'search-rec-heads') + trainAt(g.rec.train, 'search-rec') + ', Δ vs uniform ' + meanSd(g.rec.mean, g.rec.sd, 'search-rec') + ' (the model\'s)</p>'
    : '<p id="search-rec" class="muted">no batch decided yet: the first comes when the initial design\'s jobs are over</p>';
  if (g.untrained)
    html += '<p id="search-untrained">predicted best untrained: ' + headsSpan(g.untrained.heads, 'search-untrained-heads') +
      trainAt(g.untrained.train, 'search-untrained') + ', ' +
      meanSd(g.untrained.mean, g.untrained.sd, 'search-untrained') + '; <span title="a model\'s belief, not a test">P(an untrained schedule beats ' +
      'the recommended by more than ' + esc(isNum(g.delta) ? String(g.delta) : '?') + ') = <span id="search-pbeat">' + fmt(g.p_beat, 2) + '</span></span></p>';
  const f = g.fit;
  if (f)
    html += '<p id="search-fit">fit: leave-one-out RMSE <span id="search-loo">' + fmt(f.loo_rmse, 5) + '</span> (z rms <span id="search-z">' +
      fmt(f.loo_z_rms, 2) + '</span>; about 1 when calibrated) over ' + esc(isNum(f.n) ? f.n : '?') + ' schedules' +
      (f.heldout_n > 0 ? '; <span id="search-heldout">held out (the previous batch\'s ' + esc(f.heldout_n) +
        ', predicted before they were trained) RMSE ' + fmt(f.heldout_rmse, 5) + '</span>' : '') + '</p>';
  return html;
}

/* the recommendation (model mean, Δ vs uniform) against the schedules trained: a point per batch, ± sd as a band */
function searchChartData(g) {
  const pts = g.batches.filter((b) => isNum(b.trained) && isNum(b.mean))
    .map((b) => ({ x: b.trained, y: b.mean, msd: b.sd, batch: b.batch, heads: b.rec ? b.rec.heads : [] }));
  const band = pts.filter((p) => isNum(p.msd)), c = css('--accent');
  const ds = [];
  if (band.length) {
    ds.push({ label: '−1 sd', band: true, data: band.map((p) => ({ x: p.x, y: p.y - p.msd })), borderWidth: 0, pointRadius: 0,
      backgroundColor: withAlpha(c, 0.16), fill: false });
    ds.push({ label: '+1 sd', band: true, data: band.map((p) => ({ x: p.x, y: p.y + p.msd })), borderWidth: 0, pointRadius: 0,
      backgroundColor: withAlpha(c, 0.16), fill: '-1' });
  }
  ds.push({ label: 'recommended (model mean ± sd)', main: true, data: pts, borderColor: c, backgroundColor: c, borderWidth: 2,
    pointRadius: 3 });
  return ds;
}
function ensureSearchChart() {
  if (!chartsAvailable()) return false;
  if (S.charts.search) return true;
  const o = lineOptions('schedules trained', 'recommended Δ vs uniform');
  delete o.plugins.decimation;
  o.plugins.filler = { propagate: false };
  o.plugins.legend.labels.filter = (item, data) => !data.datasets[item.datasetIndex].band;
  o.scales.x.ticks.precision = 0;
  o.plugins.tooltip = { filter: (it) => !it.dataset.band, callbacks: {
    title: (items) => (items.length ? 'schedules trained ' + items[0].raw.x + ' (batch ' + items[0].raw.batch + ')' : ''),
    label: (it) => 'recommended ' + rle(it.raw.heads) + ': ' + String(it.raw.y) + (isNum(it.raw.msd) ? ' ± ' + String(it.raw.msd) + ' (the model\'s)' : ''),
  } };
  S.charts.search = new Chart($('#chart-search'), { type: 'line', data: { datasets: [] }, options: o });
  return true;
}

export function renderSearch() {
  const box = $('#search-panel');
  if (!box) return;
  const g = S.board && S.board.search;
  if (!g) { box.hidden = true; setHTML($('#search-text'), ''); return; }
  box.hidden = false;
  setHTML($('#search-text'), searchText(g));
  if (!ensureSearchChart()) { chartNote('chart-search', 'Charts unavailable: Chart.js did not load.'); return; }
  const ch = S.charts.search, ds = searchChartData(g), key = JSON.stringify(g.batches);
  const cv = $('#chart-search');
  cv.dataset.points = String(ds[ds.length - 1].data.length);
  chartNote('chart-search', ds[ds.length - 1].data.length ? null : 'No batch decided yet: a point per batch, when it is decided.');
  if (ch.$key === key) return;   // an idle poll redraws nothing
  ch.$key = key;
  ch.data.datasets = ds;
  ch.update('none');
}

/* the leaderboard's "model Δ" cell: the surrogate's mean ± sd of this row (its 95% interval on hover) */
export function surrogateCell(r) {
  const s = r.sg;
  if (!s || !isNum(s.mean)) return '<td class="num surrogate muted" title="no model estimate: not trained yet, or no batch decided">—</td>';
  return '<td class="num surrogate" data-mean="' + esc(s.mean) + '" data-sd="' + esc(s.sd) + '" title="the surrogate\'s shrunken estimate of Δ vs uniform ' +
    '(batch ' + esc(s.batch) + '): 95% [' + fmtSigned(s.lo, 5) + ', ' + fmtSigned(s.hi, 5) + ']">' + meanSd(s.mean, s.sd) + '</td>';
}
/* the column's header cell, right after Δ vs uniform (before any zero-shot column), only on a search sweep */
export function renderSurrogateHead(on) {
  const tr = document.querySelector('#leaderboard thead tr');
  const th = tr.querySelector('th.surrogate');
  if (!!th === on) return;
  if (!on) { th.remove(); return; }
  const h = document.createElement('th');
  h.className = 'num sortable surrogate';
  h.dataset.key = 'surrogate';
  h.title = 'surrogate search: the model\'s estimate of Δ vs uniform, mean ± sd (shrunken toward the model; ★ the recommended schedule)';
  h.textContent = 'model Δ (± sd)';
  tr.insertBefore(h, tr.querySelector('th[data-key=delta]').nextSibling);
}
