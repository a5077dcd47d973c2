/* actions.js — admin actions on the selected sweep and its jobs, through the existing admin routes
 * (docs/API.md): pause / resume, priority, requeue every failed job, cancel every unfinished job (the API's active_states), per
 * job cancel / requeue, and the panel of the jobs the leaderboard's outlier screen left out (issue #37), each with
 * a Requeue button (POST /api/v1/jobs/{id}/requeue: the server requeues a done job only while the screen names it).
 *
 * The admin token is entered once and kept in this tab's sessionStorage (gone with the tab; never in the URL,
 * never in localStorage); it goes only into the Authorization header of these POSTs. Without it an action is
 * refused here and no request is made. Every action asks for confirmation (window.confirm) naming what it will
 * do; its outcome (or the server's error) is shown in #actions-msg and the page polls at once.
 */
'use strict';

import { $, API, apiPost, esc, fmt, fmtSigned, isNum, rle, setHTML } from './util.js';
import { S, isActive } from './state.js';
import { poll, renderSweep } from './app.js';

const TOKEN_KEY = 'prism-admin-token';

function adminToken() {
  try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return ''; }
}
function setAdminToken(t) {
  try { if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY); } catch (e) { /* storage off */ }
}
function actionMsg(text, bad) {
  const el = $('#actions-msg');
  el.textContent = text;
  el.className = 'actions-msg' + (bad ? ' bad' : '');
  el.dataset.kind = bad ? 'error' : 'ok';
}

export function renderActions(sw) {
  const has = !!adminToken();
  const failed = S.jobs.filter((j) => j.state === 'failed').length;
  const live = S.jobs.filter((j) => isActive(j.state)).length;
  setHTML($('#actions-token'), has
    ? '<span class="muted" id="admin-token-state">admin token set for this tab</span> <button type="button" id="admin-token-forget">forget</button>'
    : '<label class="muted">admin token <input type="password" id="admin-token" autocomplete="off" size="18" placeholder="from &lt;db&gt;.tokens"></label> ' +
      '<button type="button" id="admin-token-save">use</button>');
  setHTML($('#actions-buttons'),
    (sw.state === 'paused' ? '<button type="button" data-act="resume" id="act-resume">▶ resume</button>'
      : '<button type="button" data-act="pause" id="act-pause">⏸ pause</button>') +
    '<button type="button" data-act="priority" id="act-priority">priority (' + esc(sw.priority) + ')…</button>' +
    '<button type="button" data-act="requeue-failed" id="act-requeue-failed"' + (failed ? '' : ' disabled') + '>requeue ' + failed + ' failed</button>' +
    '<button type="button" data-act="cancel-all" id="act-cancel-all"' + (live ? '' : ' disabled') + '>cancel ' + live + ' unfinished</button>');
}

async function runAction(what, confirmText, fn) {
  const tok = adminToken();
  if (!tok) { actionMsg('Refused: enter the admin token first (' + what + ' needs it; it stays in this tab only).', true); return; }
  if (!window.confirm(confirmText)) { actionMsg(what + ': not done (not confirmed).', false); return; }
  try {
    const n = await fn(tok);
    actionMsg(what + ': done' + (isNum(n) ? ' (' + n + ' request' + (n === 1 ? '' : 's') + ')' : '') + '.', false);
  } catch (e) {
    actionMsg(what + ' failed: ' + e.message + (e.status === 401 ? ' — check the admin token (forget it and enter it again).' : ''), true);
  }
  poll();
}

/* POST each path in turn; the count done, or the first error (with how many went through before it) */
async function postEach(paths, tok, body) {
  let n = 0;
  for (const p of paths) {
    try { await apiPost(p, body || {}, tok); } catch (e) { e.message += ' (after ' + n + ' of ' + paths.length + ')'; throw e; }
    n++;
  }
  return n;
}

export function onSweepAction(ev) {
  const b = ev.target.closest('button');
  if (!b) return;
  if (b.id === 'admin-token-save') {
    const v = ($('#admin-token').value || '').trim();
    if (!v) { actionMsg('Enter the token first.', true); return; }
    setAdminToken(v);
    actionMsg('Admin token kept for this tab.', false);
    renderSweep();
    return;
  }
  if (b.id === 'admin-token-forget') { setAdminToken(''); actionMsg('Admin token forgotten.', false); renderSweep(); return; }
  const sw = S.sweeps.find((s) => String(s.id) === String(S.sweepId));
  if (!sw || !b.dataset.act) return;
  const base = API + '/sweeps/' + sw.id;
  const act = b.dataset.act;
  if (act === 'pause') runAction('pause', 'Pause sweep "' + sw.name + '"? No new job is leased; running jobs finish.', (t) => postEach([base + '/pause'], t));
  else if (act === 'resume') runAction('resume', 'Resume sweep "' + sw.name + '"?', (t) => postEach([base + '/resume'], t));
  else if (act === 'priority') {
    if (!adminToken()) { runAction('priority', '', null); return; }
    const v = window.prompt('New priority of sweep "' + sw.name + '" and its queued jobs (an integer; higher leases first):', String(sw.priority));
    if (v == null) { actionMsg('priority: not changed.', false); return; }
    if (!/^-?[0-9]{1,9}$/.test(v.trim())) { actionMsg('priority: "' + v + '" is not an integer.', true); return; }
    runAction('priority', 'Set the priority of sweep "' + sw.name + '" to ' + v.trim() + '?', (t) => postEach([base + '/priority'], t, { priority: +v.trim() }));
  } else if (act === 'requeue-failed') {
    const ids = S.jobs.filter((j) => j.state === 'failed').map((j) => j.id);
    runAction('requeue failed', 'Requeue the ' + ids.length + ' failed job(s) of "' + sw.name + '"? Their attempts count afresh.',
      (t) => postEach(ids.map((id) => API + '/jobs/' + id + '/requeue'), t));
  } else if (act === 'cancel-all') {
    const ids = S.jobs.filter((j) => isActive(j.state)).map((j) => j.id);
    runAction('cancel', 'Cancel the ' + ids.length + ' unfinished job(s) of "' + sw.name + '"? Running ones stop at their next report.',
      (t) => postEach(ids.map((id) => API + '/jobs/' + id + '/cancel'), t));
  }
}

/* per-job buttons in the jobs table */
export function jobActions(j) {
  if (isActive(j.state)) return '<button type="button" class="job-act" data-job-act="cancel" data-job="' + esc(j.id) + '">cancel</button>';
  if (j.state === 'failed' || j.state === 'cancelled') return '<button type="button" class="job-act" data-job-act="requeue" data-job="' + esc(j.id) + '">requeue</button>';
  return '';
}
export function onJobAction(ev) {
  const b = ev.target.closest('button[data-job-act]');
  if (!b) return;
  const id = b.dataset.job, act = b.dataset.jobAct;
  runAction(act + ' job ' + id, (act === 'cancel' ? 'Cancel' : 'Requeue') + ' job ' + id + '?', (t) => postEach([API + '/jobs/' + id + '/' + act], t));
}

/* the jobs the outlier screen left out of the fit, each with its Requeue button (trains it again; the server
 * keeps the old result) */
export function renderScreened(sw) {
  const box = $('#screened-panel');
  if (!box) return;
  const list = (S.board && S.board.screened) || [];
  if (!list.length) { box.hidden = true; setHTML(box, ''); return; }
  box.hidden = false;
  const state = new Map(S.jobs.map((j) => [String(j.id), j.state]));
  setHTML(box, '<h3>Screened: ' + list.length + ' job' + (list.length === 1 ? '' : 's') + ' left out of the fit as outliers</h3>' +
    '<table class="jobs" id="screened"><thead><tr><th>job</th><th>schedule</th><th class="num">seed</th><th class="num">val loss</th>' +
    '<th class="num">residual</th><th>reason</th><th></th></tr></thead><tbody>' +
    list.map((x) => '<tr data-job="' + esc(x.job_id) + '"><td class="num">' + esc(x.job_id) + '</td><td><span class="rle">' + esc(rle(x.heads)) +
      '</span></td><td class="num">' + esc(x.seed) + '</td><td class="num val">' + fmt(x.val_loss, 4) + '</td><td class="num">' +
      fmtSigned(x.residual, 2) + ' <span class="muted">(&gt; ' + fmt(x.threshold, 2) + ')</span></td><td class="muted">' + esc(x.reason) +
      '</td><td>' + (state.get(String(x.job_id)) === 'done'
        ? '<button type="button" class="job-act" data-screened-job="' + esc(x.job_id) + '" id="requeue-screened-' + esc(x.job_id) + '">Requeue</button>'
        : '<span class="badge ' + esc(state.get(String(x.job_id)) || '') + '">' + esc(state.get(String(x.job_id)) || '') + '</span>') +
      '</td></tr>').join('') + '</tbody></table>' +
    '<p class="muted">Requeue trains the job again from the start (the admin token is needed); its old result is kept in the store. ' +
    'CLI: <code>prism-sweep requeue ' + esc(sw.name) + ' --state screened</code></p>');
}
export function onScreenedAction(ev) {
  const b = ev.target.closest('button[data-screened-job]');
  if (!b) return;
  const id = b.dataset.screenedJob;
  runAction('requeue screened job ' + id, 'Requeue screened job ' + id + '? It trains again from the start; its old result is kept.',
    (t) => postEach([API + '/jobs/' + id + '/requeue'], t));
}
