/* state.js — the page's state: the one `S` object every view reads (app.js owns the poll loop that fills it) and
 * the job-state vocabulary, read from the API at every poll, never spelled here.
 *
 * JOB_STATES holds what GET /api/v1/sweeps sends (docs/API.md, common/jobstate.h): `all` (job_states, in order:
 * the order of every counts listing), `halving` (halving_states: only successive-halving sweeps reach them),
 * `terminal` (terminal_states: nothing runs such a job again unless an admin requeues it) and `active`
 * (active_states: the sweep still has work; exactly the states an admin can cancel). Until the first answer the
 * lists are empty and every count is 0.
 */
'use strict';

export const JOB_STATES = { all: [], halving: [], terminal: [], active: [] };
const STATE_KEYS = { all: 'job_states', halving: 'halving_states', terminal: 'terminal_states', active: 'active_states' };

/* Takes the vocabulary from an answer of GET /api/v1/sweeps (a list the answer lacks is kept as it was). */
export function setJobStates(sw) {
  if (!sw) return;
  Object.keys(STATE_KEYS).forEach((k) => {
    const v = sw[STATE_KEYS[k]];
    if (Array.isArray(v)) JOB_STATES[k] = v.map(String);
  });
}
export const isTerminal = (state) => JOB_STATES.terminal.includes(state);
export const isActive = (state) => JOB_STATES.active.includes(state);
/* how many jobs of a counts object are in an active state */
export const activeCount = (c) => JOB_STATES.active.reduce((a, k) => a + (c[k] || 0), 0);

export const S = {
  sweeps: [],            // normalised sweeps (normSweep)
  workersAlive: null,    // workers seen within 2 lease TTLs (server's count)
  sweepId: null,         // selected sweep
  scheduleId: null,      // schedule open in the detail view
  board: null,           // normalised leaderboard of the selected sweep
  jobs: [],              // normalised jobs of the selected sweep
  jobsSync: { sweep: null, cursor: null, byId: new Map() }, // the jobs held (id -> job, the server's order) and their cursor
  sort: { key: 'rank', dir: 1 },
  jobsFilter: '',
  curves: new Map(),     // job id -> { attempt, complete, val: Map(step -> {v, tokens, extra}), train: Map, since: {val, train} }
  extraPick: '',         // the extra metric plotted in the detail view: 'KIND:NAME' (a trainer's own, docs/TRAINERS.md)
  charts: {},            // Chart.js instances of the detail view
  zoom: { val: false, train: false }, // loss charts showing only the second half of training
  detail: null,          // GET /sweeps/{id} of the selected sweep (spec, cost)
  picked: new Set(),     // schedule ids overlaid in the compare chart (curves.js)
  pickInit: false,       // the default picks (best + baseline) made for this sweep
  baselineId: null,
  ov: { kind: 'val', x: 'tokens', logy: false, ema: 0 },   // compare chart settings
  hm: 'd',               // heatmap: 'd' (D_l) or 'dd' (ΔD_l)
  online: null,          // null until the first answer, then true/false
  lastOk: 0,             // Date.now() of the last successful poll
  timer: null,
  polling: false,
  again: false,          // poll again right after the one in flight
};
