/* app.js — the prism-sweep leaderboard page.
 *
 * Design: one `S` state object and one poll loop. Every POLL_MS the loop fetches only small summaries from
 * the orchestrator's read API (sweeps, the selected sweep's leaderboard and jobs) and re-renders a table only
 * when its content changed. The jobs list is fetched whole once per sweep, then only the jobs changed since the
 * cursor of the last answer (`jobs?since=CURSOR`), merged into the ones held (S.jobsSync): an idle poll of a sweep of
 * 100,000 jobs costs bytes, not 46 MB. Loss curves are the only large data: for each job on screen the page keeps the
 * points it already holds (per kind, keyed by step) and asks only for what came after (`metrics?kind=K&since=STEP`),
 * so a live sweep costs a few hundred bytes a poll, not whole curves. Everything the server sends is normalised once
 * (the `norm*` functions) so the rest of the page does not care about optional keys.
 *
 * Rendering is plain DOM built from escaped strings; the schedule staircase is a tiny SVG; every plot is a
 * Chart.js chart (Debian's libjs-chart.js, served by the orchestrator). Failures are states, never blanks:
 * no sweeps, an empty sweep, a sweep with only failures and a server that stopped answering each get a message.
 *
 * Files: ES modules, this one the entry (index.html's one <script type="module">), each importing by name what it
 * uses, nothing shared through globals but Chart.js's `Chart` (tests/web/test_modules.py checks it): util.js
 * (helpers, the API calls), state.js (the state S and the job-state sets the API sends), charts.js (the shared
 * Chart.js options and the every-series tooltip), one file per view — forest.js (forest plot, staircase overlay),
 * heatmap.js (D_l / ΔD_l), curves.js (overlaid curves with seed bands and smoothing), spec.js (spec and cost),
 * actions.js (admin actions), search.js (a surrogate search's panel, chart and column) — and this one:
 * normalisation, polling, the leaderboard and jobs tables, the detail view, routing and UI. curves.js and
 * actions.js import functions back from this file (the poll, the rows, the curves); only function declarations
 * cross that cycle, so it is safe whatever order the modules evaluate in.
 */
'use strict';

import { $, API, api, css, esc, fmt, fmtDuration, fmtInt, fmtSigned, fmtTokS, isNum, num, parseHeads, rle, setHTML, staircase, trainWords, withAlpha } from './util.js';
import { JOB_STATES, S, activeCount, isTerminal, setJobStates } from './state.js';
import { chartNote, chartsAvailable, lineOptions } from './charts.js';
import { forestSVG, stairsSVG, svgWidth } from './forest.js';
import { heatmapSVG } from './heatmap.js';
import { ensureDefaultPicks, initOverlayControls, onPick, overlayColour, refreshOverlay } from './curves.js';
import { renderSpec } from './spec.js';
import { jobActions, onJobAction, onScreenedAction, onSweepAction, renderActions, renderScreened } from './actions.js';
import { isRecommended, normSearch, normSurrogate, renderSearch, renderSurrogateHead, surrogateCell } from './search.js';

const POLL_MS = 2000;

/* ------------------------------------------------------- normalisation */
/* Shapes are docs/API.md's; these functions only fill defaults so rendering never meets undefined. */

function normCounts(c) {
  const out = {};
  if (c) JOB_STATES.all.forEach((k) => { out[k] = num(c[k]) || 0; });
  out.total = JOB_STATES.all.reduce((a, k) => a + out[k], 0);
  return out;
}
function normSweep(s) {
  return {
    id: s.id, name: s.name || ('sweep ' + s.id), state: s.state || 'active', priority: num(s.priority) || 0,
    counts: normCounts(s.counts), eta_s: num(s.eta_s), workers_alive: num(s.workers_alive),
    steps_done: num(s.steps_done), steps_total: num(s.steps_total),
    steps_per_s: s.throughput ? num(s.throughput.steps_per_s) : null,
  };
}
function normJob(j) {
  return {
    id: j.id, schedule_id: j.schedule_id, heads: parseHeads(j.heads), seed: j.seed, is_baseline: !!j.is_baseline,
    state: j.state || 'queued', worker: j.worker || (j.worker_id != null ? 'worker ' + j.worker_id : ''),
    worker_id: j.worker_id, attempt: num(j.attempt) || 0, step: num(j.step) || 0, steps: num(j.steps) || 0,
    priority: num(j.priority) || 0, preemptions: num(j.preemptions) || 0,
    last_loss: num(j.last_loss), error: j.last_error || '', val_loss: num(j.val_loss),
  };
}
function normDelta(d) {
  d = d || {};
  const lo = num(d.ci_low), hi = num(d.ci_high);
  return { mean: num(d.mean), lo, hi, n: num(d.n), excludes_zero: !!d.excludes_zero, p: num(d.p), p_holm: num(d.p_holm),
    significant: !!d.significant, step: num(d.step), method: typeof d.method === 'string' ? d.method : null, df: num(d.df),
    seeds: num(d.seeds), items: num(d.items), reason: typeof d.reason === 'string' ? d.reason : null };
}
function normRow(r) {
  return {
    schedule_id: r.schedule_id, heads: parseHeads(r.heads), is_baseline: !!r.is_baseline,
    train: r.train && typeof r.train === 'object' ? r.train : null,
    seeds_done: num(r.seeds_done) || 0, seeds_total: num(r.seeds_total),
    mean: num(r.val_loss_mean), std: num(r.val_loss_std), tok_per_s: num(r.tok_per_s_mean), tok_per_s_std: num(r.tok_per_s_std),
    provisional: !!r.provisional, tied_best: !!r.tied_best, vs_best: r.vs_best || null,
    attn_std: Array.isArray(r.attn_distance_std) ? r.attn_distance_std.map(num) : null,
    delta: normDelta(r.delta),
    attn: Array.isArray(r.attn_distance) ? r.attn_distance.map(num) : null,
    dattn: Array.isArray(r.delta_attn_distance) ? r.delta_attn_distance.map(num) : null,
    dattn_ci: Array.isArray(r.delta_attn_distance_ci) ? r.delta_attn_distance_ci.map((c) => (Array.isArray(c) ? [num(c[0]), num(c[1])] : null)) : null,
    not_compared: r.tied_best === null || r.tied_best === undefined,
    rank: num(r.rank),
    zs: normZeroShot(r.zero_shot),
    rung: num(r.rung), pruned: !!r.pruned,   // halving: the rung the row is at, and pruned schedules
    race: normRace(r.racing),                // racing: survivor or the round it left, its Δ round by round
    sg: normSurrogate(r.surrogate),          // search: the surrogate's estimate of this trained schedule (search.js)
  };
}
/* racing: {status, out (the round it was eliminated at, or null), seeds, rounds: [{round, seeds, delta, lo, hi, out}]} */
function normRace(x) {
  if (!x || typeof x !== 'object') return null;
  return { status: String(x.status || ''), out: num(x.eliminated_round), seeds: num(x.seeds_run),
    rounds: (Array.isArray(x.rounds) ? x.rounds : []).map((e) => ({ round: num(e.round), seeds: num(e.seeds),
      delta: num(e.delta), lo: num(e.ci_low), hi: num(e.ci_high), out: !!e.eliminated })) };
}
/* per task: acc_norm mean ± std, acc mean, lm-eval's per-character acc_norm (acc_norm_char; null for results
 * without it), the items scored, and Δ acc_norm vs uniform (the blocked model per task) */
function normZeroShot(z) {
  const out = {};
  Object.keys(z && typeof z === 'object' ? z : {}).forEach((t) => {
    const c = z[t] || {};
    out[t] = { mean: num(c.acc_norm_mean), std: num(c.acc_norm_std), acc: num(c.acc_mean), n: num(c.n),
      char_mean: num(c.acc_norm_char_mean), char_std: num(c.acc_norm_char_std),
      items: num(c.items), items_max: num(c.items_max), delta: normDelta(c.delta) };
  });
  return out;
}
function normBoard(b) {
  return { rows: ((b && b.rows) || []).map(normRow), baseline_schedule_id: b ? b.baseline_schedule_id : null,
    tasks: (b && Array.isArray(b.zero_shot_tasks)) ? b.zero_shot_tasks.map(String) : [],
    comparisons: b ? num(b.comparisons) : null, zero_shot_comparisons: b ? num(b.zero_shot_comparisons) : null, tied_best_comparisons: b ? num(b.tied_best_comparisons) : null,
    seeds: b ? num(b.seeds) : null,
    analysis: b && b.analysis && typeof b.analysis === 'object' ? b.analysis : null,
    arch: b && typeof b.arch === 'string' ? b.arch : null,
    halving: b && b.halving && typeof b.halving === 'object' ? normHalving(b.halving) : null,
    racing: b && b.racing && typeof b.racing === 'object' ? b.racing : null,
    search: normSearch(b && b.search),
    trainer_note: b && typeof b.trainer_note === 'string' ? b.trainer_note : null,   /* results of 2+ trainer identities */
    screened: (b && Array.isArray(b.screened) ? b.screened : []).map(normScreened) };
}
/* a job the outlier screen left out of the fit (issue #37) */
function normScreened(x) {
  return { job_id: num(x.job_id), schedule_id: num(x.schedule_id), heads: Array.isArray(x.heads) ? x.heads.map(num) : [],
    seed: num(x.seed), level: num(x.level), val_loss: num(x.val_loss), residual: num(x.residual),
    threshold: num(x.threshold), reason: String(x.reason || '') };
}
/* successive halving: rung steps (the last = the full run) and the tokens spent against the full grid's */
function normHalving(h) {
  const steps = Array.isArray(h.rung_steps) ? h.rung_steps.map(num) : [];
  const full = num(h.full_grid_steps), fullTok = num(h.full_grid_tokens);
  return { eta: num(h.eta), mode: String(h.mode || 'sync'), rung_steps: steps,
    steps_trained: num(h.steps_trained), full_grid_steps: full, tokens_spent: num(h.tokens_spent), full_grid_tokens: fullTok,
    tokens_per_step: full && fullTok ? fullTok / full : null };
}

/* ------------------------------------------------------------ the model */

/* One row per schedule of the sweep, in the server's leaderboard order and with its rank (by the paired mean Δ
 * vs uniform; provisional schedules after complete ones; schedules with no Δ unranked, last), plus any schedule that has jobs but no leaderboard row yet; each row
 * gets a state derived from its jobs. */
export function scheduleRows() {
  const bySched = new Map();
  (S.board ? S.board.rows : []).forEach((r) => bySched.set(String(r.schedule_id), Object.assign({ jobs: [] }, r)));
  S.jobs.forEach((j) => {
    const k = String(j.schedule_id);
    if (!bySched.has(k)) {
      bySched.set(k, { schedule_id: j.schedule_id, heads: j.heads, is_baseline: j.is_baseline, seeds_done: 0,
        seeds_total: null, mean: null, std: null, tok_per_s: null, delta: normDelta({}), attn: null, dattn: null,
        zs: {}, jobs: [] });
    }
    const row = bySched.get(k);
    row.jobs.push(j);
    if (j.is_baseline) row.is_baseline = true;
    if (!row.heads.length) row.heads = j.heads;
  });
  const rows = Array.from(bySched.values());
  rows.forEach((r) => {
    if (r.jobs.length && r.seeds_total == null) r.seeds_total = r.jobs.length;
    const c = normCounts({});
    r.jobs.forEach((j) => { c[j.state] = (c[j.state] || 0) + 1; });
    r.counts = c;
    if (c.leased) r.state = 'running';
    else if (r.jobs.length && c.done === r.jobs.length) r.state = 'done';
    else if (c.pruned && !c.queued && !c.paused) r.state = 'pruned';   // halving: not promoted at a rung
    else if (c.paused && !c.queued) r.state = 'paused';                // halving: waiting for the rung's decision
    else if (c.queued) r.state = (c.done || c.failed) ? 'running' : 'queued';
    else if (c.failed) r.state = 'failed';
    else if (c.cancelled) r.state = 'cancelled';
    else r.state = r.seeds_done ? 'done' : 'queued';
  });
  rows.forEach((r) => { if (!isNum(r.mean)) r.rank = null; });
  return rows;
}
export function baselineRow(rows) { return rows.find((r) => r.is_baseline) || null; }

/* ---------------------------------------------------------------- polling */

/* The jobs of the sweep: the whole list when none of it is held (another sweep, or no cursor yet), else the jobs
 * changed since the cursor of the last answer (docs/API.md: GET /sweeps/{id}/jobs?since=). The server answers a page
 * at a time ("more"): the whole list goes on after= the last job of a page and keeps the first page's cursor (it covers
 * what changed while the pages were read); the changes go on since= each page's cursor. One answer is made of them. */
async function fetchJobs(sweep) {
  const k = S.jobsSync;
  const held = k.sweep === String(sweep) && k.cursor != null;
  const base = API + '/sweeps/' + sweep + '/jobs';
  let body = await api(base + (held ? '?since=' + encodeURIComponent(k.cursor) : ''));
  if (!body || !Array.isArray(body.jobs)) return body;
  const all = body.jobs.slice(), first = body;
  for (let pages = 1; body.more === true && pages < 10000; pages++) {
    const next = body.full !== false && !held ? '?after=' + encodeURIComponent(body.after)
      : '?since=' + encodeURIComponent(body.cursor);
    body = await api(base + next);
    if (!body || !Array.isArray(body.jobs)) return null;
    body.jobs.forEach((j) => all.push(j));
  }
  return { jobs: all, full: first.full, cursor: held ? body.cursor : first.cursor };
}

/* Merges an answer of fetchJobs into the jobs held and sets S.jobs. A new job or a changed priority moves the list's
 * order (the server's: priority, seed, schedule): the whole list is fetched again at once. */
function applyJobs(sweep, body) {
  const k = S.jobsSync, list = (body && Array.isArray(body.jobs)) ? body.jobs : [];
  let reorder = false;
  if (!body || body.full !== false || k.sweep !== String(sweep)) {   // the whole list (or a server without cursors)
    k.byId = new Map(list.map((j) => [String(j.id), normJob(j)]));
    k.sweep = String(sweep);
  } else {
    list.forEach((j) => {
      const n = normJob(j), old = k.byId.get(String(j.id));
      if (!old || old.priority !== n.priority) reorder = true;
      k.byId.set(String(j.id), n);
    });
  }
  k.cursor = !reorder && body && body.cursor != null ? body.cursor : null;
  if (reorder) S.again = true;
  S.jobs = Array.from(k.byId.values());
}

/* One poll. A call while one is in flight (a click) makes the running poll start another as soon as it ends;
 * an answer for a sweep the user has left meanwhile is dropped. */
export async function poll() {
  if (S.polling) { S.again = true; return; }
  S.polling = true;
  S.again = false;
  try {
    const sw = await api(API + '/sweeps');
    setJobStates(sw);
    S.sweeps = ((sw && sw.sweeps) || []).map(normSweep);
    S.workersAlive = sw ? num(sw.workers_alive) : null;
    if (S.sweepId == null && S.sweeps.length) S.sweepId = S.sweeps[S.sweeps.length - 1].id;
    if (S.sweepId != null && !S.sweeps.some((s) => String(s.id) === String(S.sweepId))) S.sweepId = S.sweeps.length ? S.sweeps[0].id : null;
    if (S.sweepId != null) {
      const asked = S.sweepId;
      const [board, jobs, detail] = await Promise.all([
        api(API + '/sweeps/' + asked + '/leaderboard'),
        fetchJobs(asked),
        api(API + '/sweeps/' + asked),
      ]);
      if (String(asked) !== String(S.sweepId)) { S.again = true; return; }
      S.board = normBoard(board);
      applyJobs(asked, jobs);
      S.detail = detail;
    } else {
      S.board = null; S.jobs = []; S.detail = null;
    }
    setOnline(true, null);
    render();
    if (S.scheduleId != null) await refreshDetail();
    await refreshOverlay(true);
  } catch (e) {
    setOnline(false, e);
  } finally {
    S.polling = false;
    clearTimeout(S.timer);
    S.timer = setTimeout(poll, S.again ? 0 : POLL_MS);
  }
}

export function setOnline(ok, err) {
  const conn = $('#conn'), banner = $('#banner');
  if (ok) {
    S.online = true; S.lastOk = Date.now();
    conn.dataset.state = 'live'; conn.textContent = 'live';
    banner.hidden = true; banner.textContent = '';
    document.body.classList.remove('offline');
    return;
  }
  const noAnswer = !err || err.status === 0 || err.status >= 500;
  conn.dataset.state = 'down';
  conn.textContent = noAnswer ? 'server down' : 'error';
  const last = S.lastOk ? ' Showing data from ' + new Date(S.lastOk).toTimeString().slice(0, 8) + '.' : '';
  banner.innerHTML = noAnswer
    ? '<strong>The orchestrator is not answering</strong> (' + esc(err ? err.message : 'no answer') + '). Is <code>prism-sweep serve</code> running? Retrying every ' + (POLL_MS / 1000) + ' s.' + esc(last)
    : '<strong>The orchestrator refused a request:</strong> ' + esc(err.message) + '.' + esc(last);
  banner.hidden = false;
  document.body.classList.add('offline');
  if (S.online === null || !S.lastOk) {
    setHTML($('#sweeps'), '<p class="state-msg bad" id="no-server"><strong>Cannot reach the orchestrator.</strong><br>' +
      'Start it with <code>prism-sweep serve --db prism.db</code>; this page retries by itself.</p>');
  }
  S.online = false;
}

/* --------------------------------------------------------------- rendering */

/* exported for the tests' scripts too (test_leaderboard: a board altered in place, drawn again) */
export function render() {
  if (S.sweepId != null) ensureDefaultPicks(scheduleRows());
  renderWorkers();
  renderSweeps();
  renderSweep();
  renderAllSchedules();
  renderJobs();
}

/* forest plot, staircase overlay and heatmap of every schedule (forest.js, heatmap.js) */
export function renderAllSchedules() {
  const sec = $('#all-section');
  const rows = scheduleRows();
  if (S.sweepId == null || !rows.length) { sec.hidden = true; return; }
  sec.hidden = false;
  const byRank = rows.slice().sort((a, b) => (isNum(a.rank) ? a.rank : 1e9) - (isNum(b.rank) ? b.rank : 1e9));
  const ranked = byRank.filter((r) => !r.is_baseline && isNum(r.delta.mean));
  const T = statTexts(S.board);
  setHTML($('#forest-legend'), ranked.length ? '<span class="st-ci">' + esc(T.ci) + '</span> <span class="st-sig">' + esc(T.sig) +
    '</span> <span class="st-best">' + esc(T.best) + '</span>' : '');
  setHTML($('#forest-box'), forestSVG(ranked, svgWidth($('#forest-box'))) || '<p class="state-msg" id="forest-empty">No Δ yet: it needs a seed finished by a schedule and by the baseline.</p>');
  setHTML($('#stairs-box'), stairsSVG(rows, overlayColour, svgWidth($('#stairs-box'))));
  const base = byRank.filter((r) => r.is_baseline), rest = byRank.filter((r) => !r.is_baseline);
  setHTML($('#heatmap-box'), heatmapSVG(base.concat(rest), S.hm, svgWidth($('#heatmap-box'))) ||
    '<p class="state-msg" id="heatmap-empty">No ' + (S.hm === 'dd' ? 'ΔDₗ' : 'Dₗ') + ' yet: it arrives with finished seeds (eval.attn_distance).</p>');
}

function renderWorkers() {
  const n = S.workersAlive;
  $('#workers-alive').textContent = n == null ? '' : n + ' worker' + (n === 1 ? '' : 's') + ' alive';
}

function countsBar(c) {
  const t = c.total || 1;
  return '<div class="bar" title="' + esc(JOB_STATES.all.map((k) => c[k] + ' ' + k).join(', ')) + '">' +
    JOB_STATES.all.filter((k) => c[k]).map((k) => '<span class="' + k + '" style="width:' + (100 * c[k] / t).toFixed(2) + '%"></span>').join('') + '</div>';
}
function countsText(c) {
  return JOB_STATES.all.filter((k) => c[k] || !JOB_STATES.halving.includes(k))   // halving states only when there are any
    .map((k) => '<span class="c-' + k + '">' + c[k] + ' ' + k + '</span>').join(' · ');
}
function renderSweeps() {
  const box = $('#sweeps');
  if (!S.sweeps.length) {
    setHTML(box, '<p class="state-msg" id="no-sweeps"><strong>No sweeps yet.</strong><br>Create one with ' +
      '<code>prism-sweep create sweeps/tiny-cpu.json --db prism.db</code> (or POST a spec to <code>/api/v1/sweeps</code>); it appears here by itself.</p>');
    return;
  }
  let html = '<table class="sweeps"><thead><tr><th>sweep</th><th>state</th><th>progress</th><th>jobs</th>' +
    '<th class="num">workers</th><th class="num">ETA</th></tr></thead><tbody>';
  S.sweeps.forEach((sw) => {
    const sel = String(sw.id) === String(S.sweepId);
    const eta = sw.eta_s;
    const w = sw.workers_alive;
    html += '<tr data-sweep="' + esc(sw.id) + '" class="' + (sel ? 'selected' : '') + '">' +
      '<td><a href="#sweep=' + esc(sw.id) + '">' + esc(sw.name) + '</a></td>' +
      '<td class="sweep-state">' + stateText(sw) + '</td>' +
      '<td>' + countsBar(sw.counts) + '</td>' +
      '<td class="counts">' + countsText(sw.counts) +
      (isNum(sw.steps_total) && sw.steps_total > 0 ? ' · <span class="steps-pct">' + Math.floor(100 * sw.steps_done / sw.steps_total) + '% of steps</span>' : '') + '</td>' +
      '<td class="num">' + (w == null ? '—' : w) + '</td>' +
      '<td class="num eta">' + etaText(sw) + '</td></tr>';
  });
  setHTML(box, html + '</tbody></table>');
}

/* The sweep's state as a reader means it: "finished" once nothing is left to run (every job done, failed, cancelled
 * or pruned), whatever the admin state (active/paused: in the title); else the admin state. */
function stateText(sw) {
  const c = sw.counts;
  const open = activeCount(c);
  if (c.total && !open)
    return '<span title="nothing left to run (admin state: ' + esc(sw.state) + ')">' + (c.failed ? 'ended' : 'finished') + '</span>';
  return esc(sw.state);
}

/* The ETA as the server computes it (its own rate since the sweep's last resume), or what is true instead. */
function etaText(sw) {
  const c = sw.counts;
  const open = activeCount(c);
  if (c.total && !open) {
    if (c.failed) return '<span class="eta-stopped" title="nothing left to run, but not every job succeeded">ended: ' + c.failed + ' failed</span>';
    return c.done ? 'finished' : 'ended';
  }
  if (!c.leased) return '<span class="eta-none" title="no job of this sweep is running' + (sw.state === 'paused' ? ' (paused)' : '') + '">no progress</span>';
  if (sw.eta_s == null) return '<span class="eta-none" title="measuring the rate: a few seconds of progress are needed">measuring…</span>';
  return '<span title="remaining steps ÷ the server\'s rate since the last resume (' + (isNum(sw.steps_per_s) ? sw.steps_per_s.toFixed(2) : '?') + ' steps/s)">' + fmtDuration(sw.eta_s) + '</span>';
}

const SORTERS = {
  rank: (r) => (isNum(r.rank) ? r.rank : Infinity),
  heads: (r) => r.heads.map((h) => String(h).padStart(5, '0')).join(','),
  val: (r) => (isNum(r.mean) ? r.mean : Infinity),
  seeds: (r) => r.seeds_done,
  delta: (r) => (isNum(r.delta.mean) ? r.delta.mean : Infinity),
  tps: (r) => (isNum(r.tok_per_s) ? r.tok_per_s : -Infinity),
  surrogate: (r) => (r.sg && isNum(r.sg.mean) ? r.sg.mean : Infinity),
  state: (r) => r.state,
};

function deltaCell(r) {
  if (r.is_baseline) return '<td class="num delta">baseline</td>';
  const d = r.delta;
  if (!isNum(d.mean)) return '<td class="num delta muted" title="no seed finished by both this schedule and the baseline">—</td>';
  const cls = d.significant ? (d.mean < 0 ? 'neg' : 'pos') : '';
  const ci = isNum(d.lo) && isNum(d.hi) ? ' <span class="ci">[' + fmtSigned(d.lo, 4) + ', ' + fmtSigned(d.hi, 4) + ']</span>'
    : ' <span class="ci">(n=' + (d.n || 1) + ', no test)</span>';
  const T = statTexts(S.board);
  const ph = isNum(d.p_holm) ? ' <span class="ph" title="' + esc('raw p = ' + fmtP(d.p) + ', p_Holm = ' + fmtP(d.p_holm) + '. ' + T.sig) +
    '">p<sub>Holm</sub> ' + fmtP(d.p_holm) + '</span>' : '';
  const mark = d.significant
    ? ' <span class="sig ' + cls + '" title="' + esc(T.sig) + '">' + (d.mean < 0 ? '▲' : '▼') + '</span>'
    : '';
  const at = S.board && S.board.halving && isNum(d.step) ? ' <span class="at" title="measured at step ' + d.step + '">@' + d.step + '</span>' : '';
  return '<td class="num delta ' + cls + '" data-excludes-zero="' + (d.excludes_zero ? 1 : 0) + '" data-significant="' +
    (d.significant ? 1 : 0) + '"><span class="dm">' + fmtSigned(d.mean, 4) + '</span>' + ci + (ph || mark ? '<span class="phl">' + ph + mark + '</span>' : '') + at + '</td>';
}
/* "blocked model, 110 residual df, pooled sd 0.00201" (or the paired fallback and why) */
function analysisText(a) {
  if (!a) return 'the paired mean Δ';
  const sd = isNum(num(a.pooled_sd)) ? ', pooled sd ' + fmt(num(a.pooled_sd), 5) : '';
  if (a.method === 'paired') return 'paired t-tests per schedule' + (a.fallback_reason ? ': ' + esc(a.fallback_reason) : '') + sd;
  const mod = /moderated/.test(a.comparison || '') ? ', moderated t per schedule' : '';
  return 'blocked model val loss ~ schedule + seed, ' + esc(a.residual_df) + ' residual df' + sd + mod;
}

/* What the page's two marks and its intervals mean, one sentence each, built once from the leaderboard (which test,
 * which comparison, which level and correction: docs/STATISTICS.md "What is reported"). Every place that states
 * significance (the header line, the Δ column's header, the ▲/▼ marks, p_Holm, the forest plot) uses SIG; every
 * place that states the best group (the header line, the # column, the = marks, the forest plot) uses BEST; the
 * intervals use CI; the per-schedule seed spreads (val ± std, the compare curves' bands) use BAND. */
function modelText(a) {
  if (a && a.method === 'paired') return 'paired differences over the common seeds, n − 1 df';
  return 'blocked model val loss ~ schedule + seed' + (a && isNum(num(a.residual_df)) ? ', ' + a.residual_df + ' residual df' : '');
}
function testName(a) {
  return (a && a.method === 'paired' ? 'paired t-test' : a && /moderated/.test(a.comparison || '') ? 'moderated t-test' : 'pooled t-test') +
    ' (' + modelText(a) + ')';
}
function bestGroupName(a) {
  const m = a && a.best_group && a.best_group.method;
  return m === 'bonferroni-paired' ? 'paired t-tests, Bonferroni over the pairs'
    : m === 'tukey-kramer' ? 'studentized range, Tukey–Kramer' : 'studentized range, Tukey';
}
export function statTexts(B) {
  B = B || {};
  const a = B.analysis, m = isNum(B.comparisons) ? B.comparisons : '?';
  const k = (isNum(B.tied_best_comparisons) ? B.tied_best_comparisons : 0) + 1;
  return {
    sig: '▲ better / ▼ worse than uniform: this schedule against uniform alone, p < 0.05 in a two-sided ' + testName(a) +
      ' that cancels the seed effects, Holm-adjusted over the ' + m + ' comparisons against uniform.',
    best: '= best group: no other schedule is significantly better than this one, every pair of the ' + k +
      ' schedules tested at once (' + bestGroupName(a) + ', 95%), so a truly best schedule stays in with ≥ 95% probability; ' +
      '“not shown worse”, not “equal”.',
    ci: 'Δ [95% CI]: final val loss of this schedule minus uniform’s, paired by seed (' + modelText(a) +
      '), with its unadjusted 95% Student-t interval; below 0 is better.',
    band: '± std: the spread of one schedule’s own seeds, seed effects included; it is not the comparison: two schedules’ ' +
      'spreads overlap even where their paired Δ is significant.',
  };
}
export function fmtP(p) {
  if (!isNum(p)) return '—';
  return p < 0.001 ? p.toExponential(1) : p.toFixed(3);
}

/* "n=ITEMS×SEEDS": the examples each of the schedule's cells scored, and its cells in the fit */
function zeroShotN(c) {
  const items = !isNum(c.items) ? '?' : isNum(c.items_max) && c.items_max !== c.items ? c.items + '–' + c.items_max : String(c.items);
  return 'n=' + items + '×' + (isNum(c.delta.seeds) ? c.delta.seeds : '?');
}
/* the zero-shot marks' one sentence: its own test and family (docs/API.md, zero-shot columns) */
function zeroShotSig(task) {
  const m = S.board && isNum(S.board.zero_shot_comparisons) ? S.board.zero_shot_comparisons : '?';
  return '▲ better / ▼ worse than uniform on ' + task + ' acc_norm: this schedule against uniform alone, p < 0.05 in a two-sided t-test ' +
    '(blocked model acc_norm ~ schedule + seed over the task\'s cells), Holm-adjusted over the ' + m + ' zero-shot comparisons (schedules × tasks).';
}
/* zero-shot accuracy: higher is better, so a CI above zero is the good side */
function zeroShotCell(r, task) {
  const c = r.zs && r.zs[task];
  if (!c || !isNum(c.mean)) return '<td class="num zs muted" data-task="' + esc(task) + '">—</td>';
  let html = '<td class="num zs" data-task="' + esc(task) + '" data-excludes-zero="' + (c.delta.excludes_zero ? 1 : 0) + '"' +
    (isNum(c.acc) ? ' title="acc ' + fmt(c.acc, 4) + ' (lowest summed loss); acc_norm uses the mean loss per token (llm.c\'s rule, not lm-evaluation-harness\'s per character)' +
      (isNum(c.char_mean) ? '; acc_norm_char ' + fmt(c.char_mean, 4) + (isNum(c.char_std) ? ' ± ' + fmt(c.char_std, 4) : '') +
        ' (lm-evaluation-harness\'s acc_norm: summed loss per character of the choice)' : '') + '"' : '') +
    (isNum(c.char_mean) ? ' data-acc-norm-char="' + fmt(c.char_mean, 4) + '"' : '') + '>' +
    '<span class="zm">' + fmt(c.mean, 4) + '</span>' + (isNum(c.std) ? ' <span class="pm">± ' + fmt(c.std, 4) + '</span>' : '');
  if (!r.is_baseline && isNum(c.delta.mean)) {
    const d = c.delta, cls = d.significant ? (d.mean > 0 ? 'neg' : 'pos') : '';
    html += '<br><span class="zd ' + cls + '">Δ ' + fmtSigned(d.mean, 4) + '</span>' +
      (isNum(d.lo) && isNum(d.hi) ? ' <span class="ci">[' + fmtSigned(d.lo, 4) + ', ' + fmtSigned(d.hi, 4) + ']</span>' +
        ' <span class="zn" title="items of the task × seeds of this schedule in the fit; ' + esc(d.df) + ' residual df">' + esc(zeroShotN(c)) + '</span>'
        : ' <span class="zn">' + esc(zeroShotN(c)) + '</span> <span class="ci" title="' + esc(d.reason || 'no test') + '">(no test)</span>') +
      (isNum(d.p_holm) ? ' <span class="ph">p<sub>Holm</sub> ' + fmtP(d.p_holm) + '</span>' : '') +
      (d.significant ? ' <span class="sig ' + cls + '" title="' + esc(zeroShotSig(task)) + '">' + (d.mean > 0 ? '▲' : '▼') + '</span>' : '');
  }
  return html + '</td>';
}

/* one header cell per zero-shot task, before tokens/s (rebuilt when the task list changes) */
function renderZeroShotHead(tasks) {
  const tr = document.querySelector('#leaderboard thead tr');
  const have = Array.from(tr.querySelectorAll('th.zs')).map((th) => th.dataset.task).join('\n');
  if (have === tasks.join('\n')) return;
  tr.querySelectorAll('th.zs').forEach((th) => th.remove());
  const before = tr.querySelector('th[data-key=tps]');
  tasks.forEach((t) => {
    const th = document.createElement('th');
    th.className = 'num sortable zs';
    th.dataset.key = 'zs:' + t;
    th.dataset.task = t;
    th.title = t + ': zero-shot acc_norm, mean ± std over seeds; Δ vs uniform from the blocked model (schedule + seed over the task), 95% CI, n = items × seeds';
    th.textContent = t + ' acc_norm (Δ [95% CI])';
    tr.insertBefore(th, before);
  });
}

export function renderSweep() {
  const sec = $('#sweep-section');
  const sw = S.sweeps.find((s) => String(s.id) === String(S.sweepId));
  if (!sw) { sec.hidden = true; return; }
  sec.hidden = false;
  $('#sweep-title').textContent = 'Leaderboard — ' + sw.name;
  setHTML($('#exports'), 'export: <a id="export-csv" href="' + API + '/sweeps/' + esc(sw.id) + '/leaderboard?format=csv" download>CSV</a>' +
    '<a id="export-json" href="' + API + '/sweeps/' + esc(sw.id) + '/leaderboard" target="_blank">JSON</a>' +
    '<a href="' + API + '/sweeps/' + esc(sw.id) + '/jobs" target="_blank">jobs JSON</a>');
  const rows = scheduleRows();
  const c = sw.counts;
  const B = S.board || {};
  const nTied = rows.filter((r) => r.tied_best).length;
  /* ▲/▼ and = answer two questions with two tests (statTexts); when they seem to disagree — a schedule ▲ better than
   * uniform while uniform is in the best group, or one ▼ worse than uniform while it is in the best group itself —
   * one sentence says why both hold */
  const T = statTexts(B);
  const baseTied = rows.some((r) => r.is_baseline && r.tied_best);
  const clash = rows.filter((r) => !r.is_baseline && r.delta && r.delta.significant &&
    ((r.delta.mean < 0 && baseTied) || (r.delta.mean > 0 && r.tied_best)));
  const who = [clash.some((r) => r.delta.mean < 0) ? 'uniform =' : '', clash.some((r) => r.delta.mean > 0) ? 'a ▼ schedule =' : '']
    .filter(Boolean).join(', ');
  const reconcile = clash.length
    ? '<br><span id="sig-vs-best">' + clash.length + ' schedule(s) marked ▲/▼ against uniform share the best group with the worse of ' +
      'the two (' + who + '): both hold. ▲/▼ compares one schedule with uniform alone (Holm over ' + esc(B.comparisons) +
      ' comparisons); = needs a larger gap, as it corrects for every pair of the ' + ((isNum(B.tied_best_comparisons) ? B.tied_best_comparisons : 0) + 1) +
      ' schedules at once (a higher bar). Neither says which of the = schedules is best.</span>'
    : '';
  setHTML($('#sweep-summary'), (B.arch ? '<span id="sweep-arch">' + esc(B.arch) + '</span> · ' : '') + rows.length + ' schedules · ' + c.total + ' jobs (' + countsText(c) + ')' +
    (isNum(B.comparisons) ? '<br><span id="stats-header">ranked by Δ vs uniform (' + analysisText(B.analysis) + '), ' + nTied +
      ' schedule(s) in the best group; provisional = fewer finished seeds than the sweep\'s ' + (isNum(B.seeds) ? B.seeds : '') + '.' +
      '<br><span class="st-ci">' + esc(T.ci) + '</span><br><span class="st-sig">' + esc(T.sig) + '</span><br><span class="st-best">' +
      esc(T.best) + '</span></span>' +
      reconcile +
      (B.analysis && B.analysis.note ? '<br><span id="power-note">' + esc(B.analysis.note) + '</span>' : '') +
      '' : '') +
    (B.trainer_note ? '<br><span id="trainer-note" class="warn">⚠ ' + esc(B.trainer_note) + '</span>' : '') +
    (B.halving ? '<br><span id="halving-tokens" title="successive halving, eta ' + esc(B.halving.eta) + ' (' + esc(B.halving.mode) +
      '): rungs at steps ' + esc(B.halving.rung_steps.join(', ')) + '; ranked by the highest rung reached, then by Δ">tokens spent: ' +
      fmtInt(B.halving.tokens_spent) + ' of the full grid\'s ' + fmtInt(B.halving.full_grid_tokens) + '</span>' : '') +
    (B.racing ? '<br><span id="racing-spent" title="racing: alpha ' + esc(B.racing.alpha) + ' over all rounds (' +
      esc(fmt(B.racing.alpha_round != null ? B.racing.alpha_round : B.racing.alpha_per_round, 4)) + ' per round' +
      (B.racing.alpha_round_method ? ', ' + esc(B.racing.alpha_round_method) : '') + '); seeds are added only to the schedules still in contention and the uniform baseline">racing: ' +
      esc(B.racing.rounds_decided) + ' round(s) decided' + (B.racing.finished ? ' (finished)' : '') + ', ' + esc(B.racing.survivors) +
      ' survivor(s), ' + esc(B.racing.eliminated) + ' eliminated; seeds spent ' + fmtInt(B.racing.seeds_spent) + ' of the fixed design\'s ' +
      fmtInt(B.racing.fixed_design_seeds) + ' (max_seeds × schedules)</span>' : ''));
  [['rank', T.best], ['delta', T.ci + ' ' + T.sig], ['val', 'val loss: the mean over the schedule’s finished seeds. ' + T.band]]
    .forEach(([k, t]) => { const th = document.querySelector('#leaderboard th[data-key=' + k + ']'); if (th) th.title = t; });
  const stateBox = $('#leaderboard-state');
  const wrap = $('#leaderboard-wrap');
  const anyResult = rows.some((r) => isNum(r.mean));
  if (!c.total && !rows.length) {
    setHTML(stateBox, '<p class="state-msg" id="empty-sweep"><strong>This sweep has no jobs.</strong><br>Its spec produced no schedules, or they were all excluded.</p>');
    wrap.hidden = true;
    return;
  }
  wrap.hidden = false;
  if (!anyResult && c.failed && c.failed + c.cancelled === c.total) {
    setHTML(stateBox, '<p class="state-msg bad" id="all-failed"><strong>Every job of this sweep failed</strong> — no results to rank. ' +
      'The errors are in the jobs table below.</p>');
  } else if (!anyResult) {
    setHTML(stateBox, '<p class="state-msg" id="no-results"><strong>No results yet.</strong> ' +
      (c.leased ? c.leased + ' job(s) running' : 'Waiting for a worker to lease a job') + '; rows fill in as seeds finish.</p>');
  } else {
    setHTML(stateBox, '');
  }
  const tasks = S.board && S.board.tasks ? S.board.tasks : [];
  renderZeroShotHead(tasks);
  const search = !!(S.board && S.board.search);
  renderSurrogateHead(search);
  const zsKey = S.sort.key.indexOf('zs:') === 0 ? S.sort.key.slice(3) : null;
  const key = S.sort.key, dir = S.sort.dir;
  const f = zsKey != null ? (r) => (r.zs && r.zs[zsKey] && isNum(r.zs[zsKey].mean) ? r.zs[zsKey].mean : -Infinity)
    : (SORTERS[key] || SORTERS.rank);
  const sorted = rows.slice().sort((a, b) => {
    const x = f(a), y = f(b);
    const cmp = x < y ? -1 : x > y ? 1 : 0;
    return cmp * dir || ((a.rank || 1e9) - (b.rank || 1e9));
  });
  document.querySelectorAll('#leaderboard th').forEach((th) => {
    th.setAttribute('aria-sort', th.dataset.key === key ? (dir > 0 ? 'ascending' : 'descending') : 'none');
  });
  let html = '', prunedHead = false;
  sorted.forEach((r) => {
    /* halving: the pruned schedules are a section of their own below a rule (not compared with the survivors) */
    const first = S.board && S.board.halving && r.pruned && !prunedHead && key === 'rank';
    if (first) prunedHead = true;
    const sel = String(r.schedule_id) === String(S.scheduleId);
    const cls = (r.is_baseline ? 'baseline ' : '') + (sel ? 'selected ' : '') + (r.provisional && r.rank ? 'provisional ' : '') +
      (r.tied_best ? 'tied-best ' : '') + (r.pruned ? 'pruned' : '') + (first ? ' first-pruned' : '') +
      (r.race && isNum(r.race.out) ? ' eliminated' : '') + (search && isRecommended(r) ? ' recommended' : '');
    html += '<tr tabindex="0" data-schedule="' + esc(r.schedule_id) + '" data-heads="' + esc(r.heads.join(',')) + '" class="' + cls + '">' +
      '<td class="num rank"' + (r.tied_best ? ' title="' + esc(statTexts(S.board).best) + '"'
        : r.pruned ? ' title="pruned by halving: not compared with the survivors"' : '') + '>' +
        (r.rank || '—') + (r.tied_best ? '<span class="tied">=</span>' : '') + '</td>' +
      '<td><div class="sched">' + staircase(r.heads, { base: r.is_baseline, w: Math.max(2, 72 / (r.heads.length || 1)) }) +
      '<span class="rle">' + esc(rle(r.heads)) + '</span>' + (r.is_baseline ? '<span class="tag">uniform</span>' : '') +
      (r.train ? '<span class="tag train" title="the train values this candidate trained at (the search\'s dims)">' + esc(trainWords(r.train)) + '</span>' : '') +
      (search && isRecommended(r) ? '<span class="tag rec" title="the search\'s recommendation: the lowest model mean among the trained">★ recommended</span>' : '') + '</div></td>' +
      '<td class="num val">' + (isNum(r.mean) ? fmt(r.mean, 4) + (isNum(r.std) ? ' <span class="pm">± ' + fmt(r.std, 4) + '</span>' : '') : '—') + '</td>' +
      '<td class="num seeds">' + r.seeds_done + (r.seeds_total ? '/' + r.seeds_total : '') +
        (r.provisional && r.rank ? ' <span class="prov" title="provisional: fewer finished seeds than the sweep\'s; listed after the complete schedules">prov</span>' : '') +
        (S.board && S.board.halving && isNum(r.rung) ? ' <span class="rung" title="halving: the rung this row is at (' +
          (r.rung >= S.board.halving.rung_steps.length - 1 ? 'the full run' : 'step ' + S.board.halving.rung_steps[r.rung]) +
          ')' + (r.pruned ? '; pruned there' : '') + '">r' + r.rung + (r.pruned ? ' pruned' : '') + '</span>' : '') +
        (r.race ? (isNum(r.race.out) ? ' <span class="race out" title="eliminated by racing at round ' + r.race.out +
          ' (significantly worse than another schedule still in the race); not compared with the survivors">out@' + r.race.out + '</span>'
          : r.race.status === 'survivor' ? ' <span class="race survivor" title="racing: still in contention">survivor</span>' : '') : '') + '</td>' +
      deltaCell(r) + (search ? surrogateCell(r) : '') +
      tasks.map((t) => zeroShotCell(r, t)).join('') +
      '<td class="num tps">' + fmtTokS(r.tok_per_s) + (isNum(r.tok_per_s_std) ? ' <span class="pm">± ' + fmtTokS(r.tok_per_s_std) + '</span>' : '') + '</td>' +
      '<td class="state"><span class="badge ' + esc(r.state) + '">' + esc(r.state) + '</span>' +
      (r.counts && r.counts.failed ? ' <span class="muted">' + r.counts.failed + ' failed</span>' : '') + '</td>' +
      '<td class="pick"><input type="checkbox" class="pick" data-pick="' + esc(r.schedule_id) + '" aria-label="compare ' + esc(r.heads.join(',')) +
      '"' + (S.picked.has(String(r.schedule_id)) ? ' checked' : '') + '></td></tr>';
  });
  setHTML($('#leaderboard tbody'), html);
  const pn = $('#pruned-note');
  if (pn) {
    pn.hidden = !prunedHead;
    pn.textContent = prunedHead ? 'Below the dashed rule: schedules pruned by halving, not compared with the survivors (no best-group mark); '
      + 'each Δ is measured at the step after @.' : '';
  }
  renderRaceRounds(rows);
  renderSearch();
  renderScreened(sw);
  renderSpec(S.detail);
  renderActions(sw);
}

/* racing: each survivor's Δ vs uniform with its 95% CI at every round, one line per round on a shared scale (the
 * intervals narrow as the seeds come in); eliminated schedules are listed with the round they left. */
function renderRaceRounds(rows) {
  const box = $('#race-rounds');
  if (!box) return;
  const B = S.board || {};
  const surv = rows.filter((r) => r.race && r.race.status === 'survivor' && !r.is_baseline && r.race.rounds.length);
  if (!B.racing || !surv.length) { box.hidden = true; setHTML(box, ''); return; }
  box.hidden = false;
  let lo = 0, hi = 0;
  surv.forEach((r) => r.race.rounds.forEach((e) => {
    if (isNum(e.lo)) lo = Math.min(lo, e.lo);
    if (isNum(e.hi)) hi = Math.max(hi, e.hi);
  }));
  if (!(hi > lo)) { hi = lo + 1e-3; }
  const W = 360, pad = 10, x = (v) => pad + (W - 2 * pad) * (v - lo) / (hi - lo);
  let html = '<h3>Racing: survivors\' Δ vs uniform, round by round (95% CI)</h3>';
  surv.forEach((r) => {
    const n = r.race.rounds.length, H = 8 + 10 * n;
    let svg = '<svg class="race-ci" width="' + W + '" height="' + H + '" data-schedule="' + esc(r.schedule_id) + '">' +
      '<line class="zero" x1="' + x(0) + '" x2="' + x(0) + '" y1="0" y2="' + H + '"></line>';
    r.race.rounds.forEach((e, i) => {
      const y = 8 + 10 * i;
      if (isNum(e.lo) && isNum(e.hi))
        svg += '<line class="ci" data-round="' + e.round + '" data-lo="' + e.lo + '" data-hi="' + e.hi + '" x1="' + x(e.lo) +
          '" x2="' + x(e.hi) + '" y1="' + y + '" y2="' + y + '"><title>round ' + e.round + ' (' + e.seeds + ' seeds): Δ ' +
          fmtSigned(e.delta, 4) + ' [' + fmtSigned(e.lo, 4) + ', ' + fmtSigned(e.hi, 4) + ']</title></line>';
      if (isNum(e.delta)) svg += '<circle cx="' + x(e.delta) + '" cy="' + y + '" r="2.5"></circle>';
    });
    svg += '</svg>';
    html += '<div class="race-row"><span class="rle">' + esc(rle(r.heads)) + '</span>' + svg + '</div>';
  });
  const out = rows.filter((r) => r.race && isNum(r.race.out));
  if (out.length)
    html += '<p class="muted" id="race-out">eliminated: ' + out.map((r) => esc(rle(r.heads)) + ' (round ' + r.race.out + ', ' +
      r.race.seeds + ' seeds)').join('; ') + '</p>';
  setHTML(box, html);
}

function renderJobs() {
  const sec = $('#jobs-section');
  if (S.sweepId == null) { sec.hidden = true; return; }
  sec.hidden = false;
  const jobs = S.jobs.filter((j) => !S.jobsFilter || j.state === S.jobsFilter);
  if (!jobs.length) {
    setHTML($('#jobs tbody'), '<tr><td colspan="11" class="muted">' + (S.jobs.length ? 'No ' + esc(S.jobsFilter) + ' jobs.' : 'This sweep has no jobs.') + '</td></tr>');
    return;
  }
  setHTML($('#jobs tbody'), jobs.map((j) => {
    const pct = j.steps ? Math.min(100, 100 * j.step / j.steps) : 0;
    return '<tr data-job="' + esc(j.id) + '" data-state="' + esc(j.state) + '">' +
      '<td class="num">' + esc(j.id) + '</td>' +
      '<td class="rle">' + esc(rle(j.heads)) + '</td>' +
      '<td class="num">' + esc(j.seed) + '</td>' +
      '<td><span class="badge ' + esc(j.state) + '">' + esc(j.state) + '</span></td>' +
      '<td>' + esc(j.worker || '—') + '</td>' +
      '<td class="num attempt">' + esc(j.attempt) + (j.preemptions ? ' <span class="muted preempted" title="attempts ' +
        'stopped by a preemption: they use no attempt of serve --max-attempts, only of --max-preemptions">+' +
        esc(j.preemptions) + ' preempted</span>' : '') + '</td>' +
      '<td class="num">' + fmtInt(j.step) + ' / ' + fmtInt(j.steps) + '<span class="mini"><span style="width:' + pct.toFixed(1) + '%"></span></span></td>' +
      '<td class="num">' + fmt(j.last_loss, 4) + '</td>' +
      // a done job's last_error is an earlier attempt's: not shown as its state (the job's JSON keeps it)
      (j.state === 'done' ? '<td class="err">' + (j.error ? '<a class="earlier" href="' + API + '/jobs/' + esc(j.id) +
        '" target="_blank" title="an earlier attempt failed: ' + esc(j.error) + '">history</a>' : '') + '</td>'
        : '<td class="err">' + esc(j.error) + '</td>') +
      '<td><a href="' + API + '/jobs/' + esc(j.id) + '/metrics?kind=train" target="_blank">train</a> ' +
      '<a href="' + API + '/jobs/' + esc(j.id) + '/metrics?kind=val" target="_blank">val</a> ' +
      '<a href="' + API + '/jobs/' + esc(j.id) + '/metrics?kind=train&amp;format=csv" download>csv</a></td>' +
      '<td>' + jobActions(j) + '</td></tr>';
  }).join(''));
}

/* -------------------------------------------------------------- detail view */

/* Chart.js plugin: chart.$rungs (x values) drawn as dashed vertical markers labelled r0, r1, ... (halving rungs). */
/* error bars from chart.$ci ([[lo, hi] | null] per bar): the paired CI of ΔD_l */
const ERROR_BARS = {
  id: 'errorBars',
  afterDatasetsDraw(chart) {
    const ci = chart.$ci, meta = chart.getDatasetMeta(0);
    if (!ci || !meta || !meta.data) return;
    const ctx = chart.ctx, y = chart.scales.y;
    ctx.save();
    ctx.strokeStyle = css('--fg') || '#333';
    ctx.lineWidth = 1.5;
    meta.data.forEach((bar, i) => {
      const c = ci[i];
      if (!c || !isNum(c[0]) || !isNum(c[1])) return;
      const x = bar.x, y0 = y.getPixelForValue(c[0]), y1 = y.getPixelForValue(c[1]), w = Math.min(8, (bar.width || 16) / 3);
      ctx.beginPath();
      ctx.moveTo(x, y0); ctx.lineTo(x, y1);
      ctx.moveTo(x - w, y0); ctx.lineTo(x + w, y0);
      ctx.moveTo(x - w, y1); ctx.lineTo(x + w, y1);
      ctx.stroke();
    });
    ctx.restore();
  },
};
const RUNG_MARKERS = {
  id: 'rungMarkers',
  afterDatasetsDraw(chart) {
    const xs = chart.$rungs || [];
    const x = chart.scales.x, a = chart.chartArea;
    if (!xs.length || !x || !a) return;
    const ctx = chart.ctx;
    ctx.save();
    ctx.strokeStyle = css('--muted');
    ctx.fillStyle = css('--muted');
    ctx.setLineDash([3, 3]);
    ctx.lineWidth = 1;
    ctx.font = '10px sans-serif';
    xs.forEach((v, i) => {
      const px = x.getPixelForValue(v);
      if (px < a.left || px > a.right) return;
      ctx.beginPath(); ctx.moveTo(px, a.top); ctx.lineTo(px, a.bottom); ctx.stroke();
      ctx.fillText('r' + i, px + 3, a.top + 10);
    });
    ctx.restore();
  },
};

function ensureCharts() {
  if (!chartsAvailable()) return false;
  if (S.charts.val) return true;
  S.charts.val = new Chart($('#chart-val'), { type: 'line', data: { datasets: [] }, options: lineOptions('tokens', 'val loss'), plugins: [RUNG_MARKERS] });
  S.charts.train = new Chart($('#chart-train'), { type: 'line', data: { datasets: [] }, options: lineOptions('tokens', 'train loss'), plugins: [RUNG_MARKERS] });
  S.charts.extra = new Chart($('#chart-extra'), { type: 'line', data: { datasets: [] }, options: lineOptions('tokens', 'extra metric') });
  const distOpts = lineOptions('layer', 'mean distance (tokens)');
  distOpts.scales.x.ticks.stepSize = 1;
  distOpts.elements.point.radius = 3;
  delete distOpts.plugins.decimation;
  S.charts.dist = new Chart($('#chart-dist'), { type: 'line', data: { datasets: [] }, options: distOpts });
  const dOpts = lineOptions('layer', 'ΔD (tokens)');
  dOpts.parsing = true;
  dOpts.scales.x = { type: 'category', title: { display: true, text: 'layer', color: css('--muted') }, ticks: { color: css('--muted') }, grid: { color: css('--grid') } };
  delete dOpts.plugins.decimation;
  dOpts.interaction = { mode: 'index', intersect: false };
  dOpts.plugins.tooltip = { callbacks: { label: (it) => 'ΔD layer ' + it.label + ': ' + String(it.raw) } };
  dOpts.plugins.tooltip = { callbacks: { label: (it) => {
    const ci = S.charts.ddist.$ci && S.charts.ddist.$ci[it.dataIndex];
    return 'ΔD layer ' + it.label + ': ' + String(it.raw) + (ci && isNum(ci[0]) ? ' [' + String(ci[0]) + ', ' + String(ci[1]) + '] 95% CI' : '');
  } } };
  S.charts.ddist = new Chart($('#chart-ddist'), { type: 'bar', data: { labels: [], datasets: [] }, options: dOpts, plugins: [ERROR_BARS] });
  return true;
}
function destroyCharts() {
  Object.keys(S.charts).forEach((k) => { try { S.charts[k].destroy(); } catch (e) { /* already gone */ } });
  S.charts = {};
}

/* Fetch, for one job, only the metric points after those already held (`since` = the last step held). When
 * the job's attempt changed (re-leased after an expiry, possibly resumed) the held points are dropped and the
 * curve is fetched afresh: the server then answers the latest attempt's point for every step. A job that was
 * already finished when its points were fetched is not asked again (a requeue changes its attempt). */
export async function fetchCurve(job) {
  let c = S.curves.get(job.id);
  if (c && c.attempt !== job.attempt) c = null;
  if (c && c.complete) return c;   // fetched after the job was done: nothing more will come
  if (!c) {
    c = { attempt: job.attempt, complete: false, val: new Map(), train: new Map(), since: { val: -1, train: -1 } };
    S.curves.set(job.id, c);
  }
  const doneBefore = isTerminal(job.state);
  for (const kind of ['val', 'train']) {
    for (let more = true, pages = 0; more && pages < 10000; pages++) {   // a page at a time ("more": docs/API.md)
      const body = await api(API + '/jobs/' + job.id + '/metrics?kind=' + kind + '&since=' + c.since[kind]);
      const before = c.since[kind];
      ((body && body.points) || []).forEach((p) => {
        const step = num(p.step), v = num(p.value);
        if (step == null || v == null) return;
        c[kind].set(step, { v, tokens: num(p.tokens), extra: normExtra(p.extra) });
        if (step > c.since[kind]) c.since[kind] = step;
      });
      more = !!(body && body.more === true) && c.since[kind] > before;
    }
  }
  c.complete = doneBefore;
  return c;
}
/* A point's extra metrics {name: number} (numbers only), or null. */
function normExtra(e) {
  if (!e || typeof e !== 'object' || Array.isArray(e)) return null;
  const out = {};
  let any = false;
  Object.keys(e).forEach((k) => { const v = num(e[k]); if (v != null) { out[k] = v; any = true; } });
  return any ? out : null;
}
/* A job's curve of `kind`: its loss, or with `name` its extra metric of that name (points without it left out). */
function seriesOf(job, kind, name) {
  const c = S.curves.get(job.id);
  if (!c) return [];
  return Array.from(c[kind].entries()).sort((a, b) => a[0] - b[0])
    .map(([step, p]) => ({ x: isNum(p.tokens) ? p.tokens : step, y: name ? (p.extra ? p.extra[name] : undefined) : p.v }))
    .filter((p) => !name || isNum(p.y));
}
/* The extra metrics the jobs' held points carry, as 'KIND:NAME', sorted. */
function extraNames(jobs) {
  const names = new Set();
  jobs.forEach((j) => {
    const c = S.curves.get(j.id);
    if (!c) return;
    ['train', 'val'].forEach((kind) => c[kind].forEach((p) => { if (p.extra) Object.keys(p.extra).forEach((k) => names.add(kind + ':' + k)); }));
  });
  return Array.from(names).sort();
}
/* Mean over seeds at every x any seed reached (each seed's curve is on the same step grid). */
function meanSeries(list) {
  const acc = new Map();
  list.forEach((pts) => pts.forEach((p) => {
    const a = acc.get(p.x) || [0, 0];
    a[0] += p.y; a[1] += 1;
    acc.set(p.x, a);
  }));
  return Array.from(acc.entries()).sort((a, b) => a[0] - b[0]).map(([x, a]) => ({ x, y: a[0] / a[1] }));
}

function curveDatasets(kind, mine, base, isBase, name) {
  const cMine = css('--accent'), cBase = css('--base');
  const ds = [];
  const add = (jobs, colour, label, dashed) => {
    const withData = jobs.map((j) => ({ j, s: seriesOf(j, kind, name) })).filter((x) => x.s.length);
    const per = withData.map((x) => x.s);
    withData.forEach((x) => ds.push({ label: label + ' seed ' + x.j.seed, data: x.s, faint: true, borderColor: withAlpha(colour, 0.28),
      backgroundColor: withAlpha(colour, 0.28), borderWidth: 1, pointRadius: 0 }));
    if (per.length) {
      ds.push({ label: label + ' (mean of ' + per.length + ' seed' + (per.length > 1 ? 's' : '') + ')', data: meanSeries(per),
        borderColor: colour, backgroundColor: colour, borderWidth: 2.2, pointRadius: kind === 'val' ? 2 : 0,
        borderDash: dashed ? [6, 4] : [] });
    }
  };
  if (!isBase) add(base, cBase, 'uniform', true);
  add(mine, cMine, isBase ? 'uniform' : 'this schedule', false);
  return ds;
}

async function refreshDetail() {
  const sec = $('#detail-section');
  const rows = scheduleRows();
  const row = rows.find((r) => String(r.schedule_id) === String(S.scheduleId));
  if (!row) { sec.hidden = true; return; }
  sec.hidden = false;
  const base = baselineRow(rows);
  $('#detail-title').textContent = 'Schedule ' + rle(row.heads) + (row.is_baseline ? ' (uniform baseline)' : '');
  const d = row.delta;
  setHTML($('#detail-summary'), staircase(row.heads, { w: 14, h: 44, base: row.is_baseline }) +
    '<div><div class="big-rle rle">' + esc(row.heads.join(',')) + '</div><div class="muted">' +
    'val loss ' + (isNum(row.mean) ? fmt(row.mean, 4) + (isNum(row.std) ? ' ± ' + fmt(row.std, 4) : '') : '—') +
    ' · seeds ' + row.seeds_done + (row.seeds_total ? '/' + row.seeds_total : '') +
    (row.is_baseline ? '' : ' · Δ vs uniform ' + fmtSigned(d.mean, 4) + (isNum(d.lo) ? ' [' + fmtSigned(d.lo, 4) + ', ' + fmtSigned(d.hi, 4) + ']' : '') +
      (isNum(d.p_holm) ? ' p_Holm ' + fmtP(d.p_holm) : '') + (d.significant ? ' <span class="sig" title="' + esc(statTexts(S.board).sig) + '">' +
        (d.mean < 0 ? '▲' : '▼') + '</span>' : '')) +
    (row.tied_best ? ' · <span title="' + esc(statTexts(S.board).best) + '">best group =</span>' : '') + (row.provisional && row.rank ? ' · provisional' : '') +
    ' · ' + fmtTokS(row.tok_per_s) + ' tok/s</div></div>');
  const mine = S.jobs.filter((j) => String(j.schedule_id) === String(row.schedule_id));
  const baseJobs = base && !row.is_baseline ? S.jobs.filter((j) => String(j.schedule_id) === String(base.schedule_id)) : [];
  const links = 'metrics: ' + mine.concat(baseJobs).map((j) =>
    '<a href="' + API + '/jobs/' + esc(j.id) + '/metrics?kind=val" target="_blank">job ' + esc(j.id) + ' (' + (j.is_baseline ? 'uniform, ' : '') + 'seed ' + esc(j.seed) + ')</a>').join('');
  if (!ensureCharts()) {
    setHTML($('#detail-jobs'), links + '<p class="state-msg bad" id="no-charts"><strong>Charts unavailable:</strong> Chart.js did not load ' +
      '(the orchestrator serves it from Debian\'s libjs-chart.js at /vendor/chart.js/; is the package installed?).</p>');
    return;
  }
  setHTML($('#detail-jobs'), links);
  const started = mine.concat(baseJobs).filter((j) => j.state !== 'queued' || j.attempt > 0);
  await Promise.all(started.map(fetchCurve));
  S.charts.val.data.datasets = curveDatasets('val', mine, baseJobs, row.is_baseline);
  S.charts.train.data.datasets = curveDatasets('train', mine, baseJobs, row.is_baseline);
  // halving: a dashed vertical line at each rung before the full run (x in tokens, as the curves)
  const hv = S.board && S.board.halving;
  const rungX = hv && hv.tokens_per_step ? hv.rung_steps.slice(0, -1).map((s) => s * hv.tokens_per_step) : [];
  S.charts.val.$rungs = S.charts.train.$rungs = rungX;
  ['chart-val', 'chart-train'].forEach((id) => {
    const cv = $('#' + id);
    if (rungX.length) cv.dataset.rungs = rungX.join(','); else delete cv.dataset.rungs;
  });
  const noCurve = !started.length ? 'No job of this schedule has started yet.'
    : started.every((j) => j.state === 'failed' || j.state === 'cancelled')
      ? 'No points: the jobs ended before reporting any (the errors are in the jobs table).' : 'No points reported yet.';
  chartNote('chart-val', S.charts.val.data.datasets.length ? null : noCurve);
  chartNote('chart-train', S.charts.train.data.datasets.length ? null : noCurve);
  applyZoom(S.charts.val, S.zoom.val);
  applyZoom(S.charts.train, S.zoom.train);
  S.charts.val.update('none');
  S.charts.train.update('none');
  renderExtraChart(started, mine, baseJobs, row.is_baseline);
  // Attention distance: the schedule's D_l and the baseline's, and ΔD_l.
  const cMine = css('--accent'), cBase = css('--base');
  const distDs = [];
  if (base && base.attn && !row.is_baseline) {
    distDs.push({ label: 'uniform', data: base.attn.map((y, i) => ({ x: i + 1, y })), borderColor: cBase, backgroundColor: cBase, borderDash: [6, 4], borderWidth: 2 });
  }
  if (row.attn) distDs.push({ label: row.is_baseline ? 'uniform' : 'this schedule', data: row.attn.map((y, i) => ({ x: i + 1, y })), borderColor: cMine, backgroundColor: cMine, borderWidth: 2 });
  S.charts.dist.data.datasets = distDs;
  chartNote('chart-dist', distDs.length ? null : 'No Dₗ yet: it arrives with the first finished seed (eval.attn_distance).');
  S.charts.dist.update('none');
  let dd = row.dattn;
  if (!dd && row.attn && base && base.attn) dd = row.attn.map((v, i) => (isNum(v) && isNum(base.attn[i]) ? v - base.attn[i] : null));
  if (row.is_baseline) dd = null;
  const more = css('--accent-2'), less = css('--accent');
  S.charts.ddist.data.labels = dd ? dd.map((_, i) => String(i + 1)) : [];
  S.charts.ddist.data.datasets = dd ? [{ label: 'ΔD_l', data: dd, backgroundColor: dd.map((v) => withAlpha(v < 0 ? less : more, 0.8)) }] : [];
  S.charts.ddist.options.plugins.legend.display = false;
  S.charts.ddist.$ci = dd && row.dattn_ci ? row.dattn_ci : null;   /* the paired 95% CI per layer: error bars */
  chartNote('chart-ddist', dd ? null : row.is_baseline ? 'ΔDₗ compares a schedule with this baseline: open another schedule.'
    : 'Needs Dₗ of this schedule and of the baseline (a finished seed of each).');
  S.charts.ddist.update('none');
}

/* The trainer's own metrics (a train/val line's "extra"): a selector of the names the held points carry and the
 * chosen one's curves, as the loss charts draw theirs. Hidden while no point has any. */
function renderExtraChart(started, mine, baseJobs, isBase) {
  const names = extraNames(started);
  const fig = $('#extra-figure'), sel = $('#extra-pick');
  fig.hidden = !names.length;
  if (!names.length) { S.charts.extra.data.datasets = []; S.charts.extra.update('none'); return; }
  if (names.indexOf(S.extraPick) < 0) S.extraPick = names[0];
  const have = Array.from(sel.options).map((o) => o.value);
  if (have.join('\n') !== names.join('\n')) {
    setHTML(sel, names.map((n) => { const i = n.indexOf(':'); return '<option value="' + esc(n) + '">' + esc(n.slice(i + 1) + ' (' + n.slice(0, i) + ')') + '</option>'; }).join(''));
  }
  sel.value = S.extraPick;
  const i = S.extraPick.indexOf(':'), kind = S.extraPick.slice(0, i), name = S.extraPick.slice(i + 1);
  S.charts.extra.options.scales.y.title.text = name + ' (' + kind + ')';
  S.charts.extra.data.datasets = curveDatasets(kind, mine, baseJobs, isBase, name);
  S.charts.extra.$metric = S.extraPick;
  chartNote('chart-extra', S.charts.extra.data.datasets.length ? null : 'This schedule\'s points do not carry ' + name + '.');
  S.charts.extra.update('none');
}

/* Zoomed: x from half the furthest token count, y fitted to the points in that window (5% margin). */
function applyZoom(chart, on) {
  const sc = chart.options.scales;
  delete sc.x.min; delete sc.y.min; delete sc.y.max;
  if (!on) return;
  let xmax = -Infinity;
  chart.data.datasets.forEach((d) => d.data.forEach((p) => { if (p.x > xmax) xmax = p.x; }));
  if (!isFinite(xmax)) return;
  const x0 = xmax / 2;
  let lo = Infinity, hi = -Infinity;
  chart.data.datasets.forEach((d) => d.data.forEach((p) => {
    if (p.x >= x0) { if (p.y < lo) lo = p.y; if (p.y > hi) hi = p.y; }
  }));
  if (!isFinite(lo)) return;
  const pad = Math.max((hi - lo) * 0.05, 1e-4);
  sc.x.min = x0; sc.y.min = lo - pad; sc.y.max = hi + pad;
}

function openSchedule(id) {
  S.scheduleId = id;
  updateHash();
  renderSweep();
  refreshDetail().then(() => {
    $('#detail-section').scrollIntoView({ behavior: 'auto', block: 'start' });
  }).catch((e) => setOnline(false, e));
}
function closeSchedule() {
  S.scheduleId = null;
  updateHash();
  $('#detail-section').hidden = true;
  renderSweep();
}

/* ------------------------------------------------------------ routing & UI */

function updateHash() {
  const p = new URLSearchParams();
  if (S.sweepId != null) p.set('sweep', S.sweepId);
  if (S.scheduleId != null) p.set('schedule', S.scheduleId);
  const h = '#' + p.toString();
  if (window.location.hash !== h) window.history.replaceState(null, '', h);
}
function readHash() {
  const p = new URLSearchParams(window.location.hash.replace(/^#/, ''));
  const id = (v) => (v != null && /^[0-9]{1,18}$/.test(v) ? v : null);   // ids only: they go into API paths
  const sw = id(p.get('sweep')), sc = id(p.get('schedule'));
  const changedSweep = sw != null && String(sw) !== String(S.sweepId);
  if (sw != null) S.sweepId = sw;
  if (changedSweep) { S.curves.clear(); S.picked.clear(); S.pickInit = false; }
  S.scheduleId = sc;
  if (sc == null) $('#detail-section').hidden = true;
}

function applyTheme(t) {
  if (t) document.documentElement.dataset.theme = t; else delete document.documentElement.dataset.theme;
  try { if (t) localStorage.setItem('prism-theme', t); else localStorage.removeItem('prism-theme'); } catch (e) { /* private mode */ }
  destroyCharts();
  renderSearch();
  if (S.scheduleId != null) refreshDetail().catch((e) => setOnline(false, e));
  refreshOverlay(false).catch((e) => setOnline(false, e));
}
function currentTheme() {
  const t = document.documentElement.dataset.theme;
  if (t) return t;
  return window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

function init() {
  $('#poll-s').textContent = String(POLL_MS / 1000);
  $('#theme-toggle').addEventListener('click', () => applyTheme(currentTheme() === 'dark' ? 'light' : 'dark'));
  if (window.matchMedia) {
    window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
      if (!document.documentElement.dataset.theme) applyTheme(null);
    });
  }
  $('#sweeps').addEventListener('click', (ev) => {
    const tr = ev.target.closest('tr[data-sweep]');
    if (!tr) return;
    ev.preventDefault();
    if (String(tr.dataset.sweep) !== String(S.sweepId)) {
      S.sweepId = tr.dataset.sweep; S.scheduleId = null; S.curves.clear(); S.board = null; S.jobs = []; S.detail = null;
      S.picked.clear(); S.pickInit = false;
      $('#detail-section').hidden = true;
      updateHash();
      poll();
    }
  });
  const lb = $('#leaderboard');
  lb.querySelector('thead').addEventListener('click', (ev) => {
    const th = ev.target.closest('th[data-key]');
    if (!th) return;
    const k = th.dataset.key;
    S.sort = { key: k, dir: S.sort.key === k ? -S.sort.dir : (k === 'tps' || k === 'seeds' || k.indexOf('zs:') === 0 ? -1 : 1) };
    renderSweep();
  });
  const pick = (ev) => {
    if (ev.target.closest('input.pick, td.pick')) return;   // the compare column (curves.js onPick)
    const tr = ev.target.closest('tr[data-schedule]');
    if (!tr) return;
    if (ev.type === 'keydown' && ev.key !== 'Enter' && ev.key !== ' ') return;
    ev.preventDefault();
    openSchedule(tr.dataset.schedule);
  };
  lb.querySelector('tbody').addEventListener('click', pick);
  lb.querySelector('tbody').addEventListener('keydown', pick);
  lb.querySelector('tbody').addEventListener('change', onPick);
  $('#actions').addEventListener('click', onSweepAction);
  $('#jobs tbody').addEventListener('click', onJobAction);
  $('#screened-panel').addEventListener('click', onScreenedAction);
  const openFrom = (ev) => {
    const g = ev.target.closest('[data-schedule]');
    if (g) openSchedule(g.dataset.schedule);
  };
  ['#forest-box', '#stairs-box', '#heatmap-box'].forEach((sel) => $(sel).addEventListener('click', openFrom));
  const hm = (mode) => {
    S.hm = mode;
    $('#hm-d').setAttribute('aria-pressed', String(mode === 'd'));
    $('#hm-dd').setAttribute('aria-pressed', String(mode === 'dd'));
    setHTML($('#hm-title'), mode === 'dd' ? 'ΔD<sub>l</sub> = D<sub>l</sub>(schedule) − D<sub>l</sub>(uniform) by layer' : 'Attention distance D<sub>l</sub> by layer');
    renderAllSchedules();
  };
  $('#hm-d').addEventListener('click', () => hm('d'));
  $('#hm-dd').addEventListener('click', () => hm('dd'));
  initOverlayControls();
  $('#detail-close').addEventListener('click', closeSchedule);
  document.querySelectorAll('button.zoom').forEach((b) => b.addEventListener('click', () => {
    const k = b.dataset.kind;
    S.zoom[k] = !S.zoom[k];
    b.setAttribute('aria-pressed', String(S.zoom[k]));
    const ch = S.charts[k];
    if (ch) { applyZoom(ch, S.zoom[k]); ch.update('none'); }
  }));
  $('#home').addEventListener('click', (ev) => { ev.preventDefault(); closeSchedule(); });
  $('#jobs-filter').addEventListener('change', (ev) => { S.jobsFilter = ev.target.value; renderJobs(); });
  $('#extra-pick').addEventListener('change', (ev) => { S.extraPick = ev.target.value; refreshDetail(); });
  window.addEventListener('hashchange', () => { readHash(); poll(); });
  let resizing = null;   // the SVG views are laid out at their box's width (forest.js svgWidth): again after a resize
  window.addEventListener('resize', () => { clearTimeout(resizing); resizing = setTimeout(renderAllSchedules, 150); });
  readHash();
  poll();
}

document.addEventListener('DOMContentLoaded', init);
