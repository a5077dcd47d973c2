/* spec.js — the selected sweep's spec (model size, steps, tokens, data, rules) and its cost so far (tokens
 * trained, device-hours), from GET /api/v1/sweeps/{id} (`spec`, `cost`) and the summary's steps.
 *
 * Tokens per step come from the spec's train block with the job model's defaults (grad_accum 1, seq_len the
 * model's), as common/jobmodel.c derives them; what the server counted (cost.tokens_trained) is shown as sent.
 */
'use strict';

import { $, esc, fmtInt, isNum, num, setHTML } from './util.js';

function specRow(k, v) { return '<tr><th>' + esc(k) + '</th><td>' + v + '</td></tr>'; }

export function renderSpec(d) {
  const box = $('#spec');
  if (!d || !d.spec || typeof d.spec !== 'object') { setHTML(box, '<p class="muted">No spec.</p>'); return; }
  const sp = d.spec, m = sp.model || {}, t = sp.train || {}, e = sp.eval || {}, data = sp.data || {};
  const seq = num(t.seq_len) || num(m.seq_len), tps = (num(t.batch_size) || 0) * (seq || 0) * (num(t.grad_accum) || 1);
  const steps = num(t.steps);
  const nSched = num(d.schedules), seeds = Array.isArray(sp.seeds) ? sp.seeds.length : num(sp.seeds);
  const cost = d.cost || {};
  const totalTok = isNum(num(d.steps_total)) && tps ? num(d.steps_total) * tps : null;
  const rules = sp.rules && typeof sp.rules === 'object' ? Object.keys(sp.rules).map((k) => esc(k) + ' ' + esc(JSON.stringify(sp.rules[k]))).join(', ') : 'defaults';
  let h = '<table class="spec-table"><tbody>' +
    specRow('model', esc(m.arch || 'gpt2') + ' · ' + esc(m.n_layer) + ' layers · d_model ' + esc(m.d_model) + ' · vocab ' + esc(m.vocab_size) + ' · context ' + esc(m.seq_len)) +
    specRow('training', fmtInt(steps) + ' steps × ' + esc(t.batch_size) + ' × ' + esc(seq) + ' × ' + esc(t.grad_accum || 1) + ' = ' + fmtInt(tps) +
      ' tokens/step · <span id="spec-job-tokens">' + fmtInt(steps * tps) + '</span> tokens per job · lr ' + esc(t.lr) + ' (' + esc(t.lr_schedule || '') + ')') +
    specRow('grid', fmtInt(nSched) + ' schedules × ' + fmtInt(seeds) + ' seeds' + (sp.halving ? ' · successive halving, eta ' + esc(sp.halving.eta) : '')) +
    specRow('data', 'train <code>' + esc(data.train) + '</code> · val <code>' + esc(data.val) + '</code>') +
    specRow('eval', 'every ' + esc(e.every) + ' steps · ' + esc(e.batches === 0 ? 'all' : e.batches) + ' batches' + (e.attn_distance ? ' · Dₗ' : '') +
      (Array.isArray(e.tasks) && e.tasks.length ? ' · ' + e.tasks.map((x) => esc(x.name)).join(', ') : '')) +
    specRow('rules', rules) +
    specRow('cost so far', '<span id="cost-tokens">' + fmtInt(num(cost.tokens_trained)) + '</span> tokens trained' +
      (isNum(totalTok) ? ' of ' + fmtInt(totalTok) : '') + ' · <span id="cost-hours">' + (isNum(num(cost.device_hours)) ? num(cost.device_hours).toFixed(3) : '—') +
      '</span> device-hours (' + fmtInt(num(cost.jobs_timed)) + ' finished job' + (num(cost.jobs_timed) === 1 ? '' : 's') + ' reported; running jobs count when done)') +
    '</tbody></table>';
  setHTML(box, h);
}
