/* curves.js — loss curves of any set of schedules overlaid (ticked in the leaderboard's "compare" column):
 * per schedule the mean over its seeds with a band of ± one standard deviation across seeds, EMA smoothing
 * from a slider (the raw mean kept faint beside the smoothed one), x in tokens or steps, a log y axis.
 *
 * Smoothing is a view: it makes new arrays for the chart from the held points (S.curves, fetched by app.js's
 * fetchCurve) and never changes them, so moving the slider redraws without a request. The EMA is TensorBoard's
 * (debiased: s_t = w·s_{t-1} + (1−w)·x_t, divided by 1 − w^t), over the points in step order. Each drawn point
 * keeps its raw mean, seed std and seed count for the tooltip (charts.js prints them at full precision).
 *
 * The band is one schedule's own seed spread, not the comparison: the same seed moves every schedule alike, so two
 * bands overlap even where the paired Δ is significant. Under the chart, #overlay-paired draws each ticked schedule's
 * paired Δ against uniform with its 95% CI (the leaderboard's delta, the ranking's own numbers) on one scale with 0.
 */
'use strict';

import { $, css, esc, fmtSigned, isNum, rle, setHTML, withAlpha } from './util.js';
import { S } from './state.js';
import { chartNote, chartsAvailable, fmtTokens, fullTooltip, lineOptions } from './charts.js';
import { baselineRow, fetchCurve, fmtP, renderAllSchedules, scheduleRows, setOnline, statTexts } from './app.js';

const PALETTE = ['#2563eb', '#d9480f', '#16a34a', '#9333ea', '#db2777', '#0891b2', '#ca8a04', '#4f46e5', '#dc2626', '#0d9488'];
const OVERLAY_MAX = 10;

/* colour of a picked schedule (its place among the picks), null when not picked; the baseline is grey */
export function overlayColour(r) {
  if (!S.picked.has(String(r.schedule_id))) return null;
  if (r.is_baseline) return css('--base');
  const ids = Array.from(S.picked).filter((id) => id !== String(S.baselineId));
  return PALETTE[Math.max(0, ids.indexOf(String(r.schedule_id))) % PALETTE.length];
}

/* first view of a sweep with results: the best schedule and the baseline are ticked */
export function ensureDefaultPicks(rows) {
  if (S.pickInit) return;
  const best = rows.filter((r) => isNum(r.rank) && !r.is_baseline).sort((a, b) => a.rank - b.rank)[0];
  const base = baselineRow(rows);
  if (!best && !base) return;
  S.pickInit = true;
  if (best) S.picked.add(String(best.schedule_id));
  if (base) S.picked.add(String(base.schedule_id));
}

function emaSmooth(pts, w) {
  if (!(w > 0)) return pts.map((p) => Object.assign({}, p, { y: p.y, raw: p.y }));
  let s = 0, k = 0;
  return pts.map((p) => {
    s = w * s + (1 - w) * p.y;
    k++;
    return Object.assign({}, p, { y: s / (1 - Math.pow(w, k)), raw: p.y });
  });
}
function emaSeries(vals, w) {
  if (!(w > 0)) return vals.slice();
  let s = 0, k = 0;
  return vals.map((v) => { s = w * s + (1 - w) * v; k++; return s / (1 - Math.pow(w, k)); });
}

/* mean and sample std over the seeds' curves at each step any seed reached; x by S.ov.x */
function seedMean(jobs, kind) {
  const acc = new Map();
  jobs.forEach((j) => {
    const c = S.curves.get(j.id);
    if (!c) return;
    c[kind].forEach((p, step) => {
      const a = acc.get(step) || { ys: [], tokens: p.tokens };
      a.ys.push(p.v);
      acc.set(step, a);
    });
  });
  return Array.from(acc.entries()).sort((a, b) => a[0] - b[0]).map(([step, a]) => {
    const n = a.ys.length, m = a.ys.reduce((x, y) => x + y, 0) / n;
    const sd = n > 1 ? Math.sqrt(a.ys.reduce((x, y) => x + (y - m) * (y - m), 0) / (n - 1)) : null;
    return { x: S.ov.x === 'steps' || !isNum(a.tokens) ? step : a.tokens, y: m, sd, n };
  });
}

function overlayDatasets(rows) {
  const kind = S.ov.kind, w = S.ov.ema;
  const ds = [];
  rows.forEach((r) => {
    const colour = overlayColour(r);
    const jobs = S.jobs.filter((j) => String(j.schedule_id) === String(r.schedule_id));
    const mean = seedMean(jobs, kind);
    if (!mean.length) return;
    const name = rle(r.heads) + (r.is_baseline ? ' (uniform)' : '');
    const withSd = mean.filter((p) => p.sd != null);
    if (withSd.length) {
      const m = emaSeries(withSd.map((p) => p.y), w), sd = withSd.map((p) => p.sd);
      ds.push({ label: name + ' −1 sd of its seeds', band: true, schedule: String(r.schedule_id), data: withSd.map((p, i) => ({ x: p.x, y: m[i] - sd[i] })),
        borderWidth: 0, pointRadius: 0, backgroundColor: withAlpha(colour, 0.14), fill: false });
      ds.push({ label: name + ' +1 sd of its seeds', band: true, schedule: String(r.schedule_id), data: withSd.map((p, i) => ({ x: p.x, y: m[i] + sd[i] })),
        borderWidth: 0, pointRadius: 0, backgroundColor: withAlpha(colour, 0.14), fill: '-1' });
    }
    if (w > 0) {
      ds.push({ label: name + ' (raw)', faint: true, raw: true, schedule: String(r.schedule_id), data: mean.map((p) => ({ x: p.x, y: p.y })),
        borderColor: withAlpha(colour, 0.3), backgroundColor: withAlpha(colour, 0.3), borderWidth: 1, pointRadius: 0 });
    }
    const nSeeds = Math.max.apply(null, mean.map((p) => p.n));
    ds.push({ label: name + ' · ' + nSeeds + ' seed' + (nSeeds > 1 ? 's' : ''), main: true, schedule: String(r.schedule_id),
      heads: r.heads.join(','), data: emaSmooth(mean, w), borderColor: colour, backgroundColor: colour,
      borderWidth: 2, pointRadius: 0, borderDash: r.is_baseline ? [6, 4] : [] });
  });
  return ds;
}

function ensureOverlayChart() {
  if (!chartsAvailable()) return false;
  if (S.charts.overlay) return true;
  const o = lineOptions(S.ov.x === 'steps' ? 'step' : 'tokens', S.ov.kind + ' loss');
  delete o.plugins.decimation;   // every point drawn: the raw/smoothed pairs must stay index-aligned
  o.plugins.legend.labels.filter = (item, data) => { const d = data.datasets[item.datasetIndex]; return !d.faint && !d.band; };
  o.plugins.filler = { propagate: false };
  S.charts.overlay = new Chart($('#chart-overlay'), { type: 'line', data: { datasets: [] }, options: o });
  return true;
}

/* Re-apply the axis settings (tokens/steps, log y) and data; no fetch when `fetch` is false (the controls). */
export async function refreshOverlay(fetch) {
  const sec = $('#overlay-section');
  const rows = scheduleRows();
  if (!rows.length || S.sweepId == null) { sec.hidden = true; return; }
  sec.hidden = false;
  ensureDefaultPicks(rows);
  const base = baselineRow(rows);
  S.baselineId = base ? base.schedule_id : null;
  const picked = rows.filter((r) => S.picked.has(String(r.schedule_id)));
  $('#overlay-picked').textContent = picked.length ? picked.length + ' schedule' + (picked.length > 1 ? 's' : '') + ' (tick more in the table’s compare column)'
    : 'none: tick schedules in the table’s compare column';
  if (!ensureOverlayChart()) { chartNote('chart-overlay', 'Charts unavailable: Chart.js did not load.'); return; }
  if (fetch !== false) {
    const jobs = S.jobs.filter((j) => S.picked.has(String(j.schedule_id)) && (j.state !== 'queued' || j.attempt > 0));
    await Promise.all(jobs.map(fetchCurve));
  }
  const ch = S.charts.overlay;
  ch.data.datasets = overlayDatasets(picked);
  const xs = ch.options.scales.x, ys = ch.options.scales.y;
  xs.title.text = S.ov.x === 'steps' ? 'step' : 'tokens';
  xs.ticks.callback = S.ov.x === 'steps' ? undefined : fmtTokens;
  ys.type = S.ov.logy ? 'logarithmic' : 'linear';
  ys.title.text = S.ov.kind + ' loss' + (S.ov.logy ? ' (log)' : '');
  ch.options.plugins.tooltip = fullTooltip(S.ov.x === 'steps' ? 'step' : 'tokens');
  const cv = $('#chart-overlay');
  cv.dataset.schedules = picked.map((r) => r.heads.join(',')).join(';');
  cv.dataset.ema = String(S.ov.ema);
  setHTML($('#overlay-paired'), pairedIntervals(picked));
  chartNote('chart-overlay', ch.data.datasets.length ? null : picked.length ? 'No points reported yet for the ticked schedules.' : 'Tick schedules in the table to compare their curves.');
  ch.update('none');
}

/* Each ticked schedule's paired Δ vs uniform with its 95% CI on one scale (0 dashed), the mark and p_Holm: where
 * the decision is made, beside the bands that do not make it. */
function pairedIntervals(picked) {
  const list = picked.filter((r) => !r.is_baseline && isNum(r.delta.mean));
  if (!list.length) return '';
  let lo = 0, hi = 0;
  list.forEach((r) => [r.delta.mean, r.delta.lo, r.delta.hi].forEach((v) => { if (isNum(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } }));
  if (!(hi > lo)) hi = lo + 1e-3;
  const W = 180, H = 14, pad = 6, sx = (v) => pad + (v - lo) / (hi - lo) * (W - 2 * pad);
  const T = statTexts(S.board);
  return '<table class="paired-ci"><thead><tr><th>schedule</th><th class="num" title="' + esc(T.ci) + '">paired Δ vs uniform [95% CI]</th>' +
    '<th class="num" title="' + esc(T.sig) + '">p<sub>Holm</sub></th></tr></thead><tbody>' + list.map((r) => {
    const d = r.delta, ci = isNum(d.lo) && isNum(d.hi);
    return '<tr data-schedule="' + esc(r.schedule_id) + '" data-heads="' + esc(r.heads.join(',')) + '" data-mean="' + d.mean +
      '" data-lo="' + (ci ? d.lo : '') + '" data-hi="' + (ci ? d.hi : '') + '"><td><span class="swatch" style="background:' +
      esc(overlayColour(r) || 'transparent') + '"></span> <span class="rle">' + esc(rle(r.heads)) + '</span></td>' +
      '<td class="num">' + fmtSigned(d.mean, 4) + (ci ? ' <span class="ci">[' + fmtSigned(d.lo, 4) + ', ' + fmtSigned(d.hi, 4) + ']</span>' : ' <span class="ci">(no interval)</span>') +
      '<svg class="paired-bar" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '" role="img" aria-label="paired delta interval">' +
      '<line class="zero" x1="' + sx(0).toFixed(1) + '" x2="' + sx(0).toFixed(1) + '" y1="0" y2="' + H + '"/>' +
      (ci ? '<line class="ci" x1="' + sx(d.lo).toFixed(1) + '" x2="' + sx(d.hi).toFixed(1) + '" y1="' + H / 2 + '" y2="' + H / 2 + '"/>' : '') +
      '<circle cx="' + sx(d.mean).toFixed(1) + '" cy="' + H / 2 + '" r="3"/></svg></td>' +
      '<td class="num">' + (isNum(d.p_holm) ? fmtP(d.p_holm) : '—') + (d.significant ? ' <span class="sig ' + (d.mean < 0 ? 'neg' : 'pos') + '" title="' +
        esc(T.sig) + '">' + (d.mean < 0 ? '▲' : '▼') + '</span>' : '') + '</td></tr>';
  }).join('') + '</tbody></table>';
}

export function initOverlayControls() {
  const upd = () => refreshOverlay(false).catch((e) => setOnline(false, e));
  $('#ov-kind').addEventListener('change', (e) => { S.ov.kind = e.target.value; refreshOverlay(true).catch((er) => setOnline(false, er)); });
  $('#ov-x').addEventListener('change', (e) => { S.ov.x = e.target.value; upd(); });
  $('#ov-logy').addEventListener('change', (e) => { S.ov.logy = e.target.checked; upd(); });
  const slider = $('#ov-ema');
  const show = () => { $('#ov-ema-val').textContent = S.ov.ema.toFixed(2); };
  slider.addEventListener('input', () => { S.ov.ema = Math.min(0.99, Math.max(0, +slider.value)); show(); upd(); });
  show();
}

/* the leaderboard's compare column: one checkbox per schedule */
export function onPick(ev) {
  const box = ev.target.closest('input.pick');
  if (!box) return false;
  const id = String(box.dataset.pick);
  if (box.checked) {
    if (S.picked.size >= OVERLAY_MAX) { box.checked = false; $('#overlay-picked').textContent = 'at most ' + OVERLAY_MAX + ' schedules at once'; return true; }
    S.picked.add(id);
  } else S.picked.delete(id);
  renderAllSchedules();
  refreshOverlay(true).catch((e) => setOnline(false, e));
  return true;
}
