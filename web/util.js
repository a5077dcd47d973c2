/* util.js — the helpers every view of the page shares: DOM and escaping, number formats, the schedule's
 * run-length text and staircase SVG, theme colours, and the API calls (api: GET; apiPost: an admin POST).
 *
 * The page's scripts are ES modules (index.html loads app.js, which imports the rest); each names what it uses in
 * its imports and shares nothing through the global scope, so there is no bundler and no build step. This one
 * imports nothing and touches no state of the page (state.js).
 */
'use strict';

export const API = '/api/v1';
const FETCH_TIMEOUT_MS = 5000;

export const $ = (sel) => document.querySelector(sel);
export const esc = (s) => String(s == null ? '' : s).replace(/[&<>"']/g,
  (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
/* Replaces an element's content only when it changed, so rows under the pointer survive an idle poll. */
export function setHTML(el, html) {
  if (el.__html === html) return;
  el.__html = html;
  el.innerHTML = html;
}
export const isNum = (x) => typeof x === 'number' && isFinite(x);
export const num = (x) => (x == null || x === '' ? null : (isFinite(+x) ? +x : null));
const minus = (s) => s.replace(/^-/, '−');
export const fmt = (x, d) => (isNum(x) ? minus(x.toFixed(d)) : '—');
export const fmtSigned = (x, d) => (isNum(x) ? (x > 0 ? '+' : '') + minus(x.toFixed(d)) : '—');

export function fmtInt(x) {
  if (!isNum(x)) return '—';
  return Math.round(x).toLocaleString('en-US');
}
export function fmtTokS(x) {
  if (!isNum(x)) return '—';
  if (x >= 1e6) return (x / 1e6).toFixed(2) + 'M';
  if (x >= 1e4) return (x / 1e3).toFixed(1) + 'K';
  return Math.round(x).toLocaleString('en-US');
}
export function fmtDuration(s) {
  if (!isNum(s) || s < 0) return '—';
  if (s < 60) return Math.round(s) + ' s';
  if (s < 3600) return Math.round(s / 60) + ' min';
  if (s < 86400) return (s / 3600).toFixed(1) + ' h';
  return (s / 86400).toFixed(1) + ' d';
}
export function parseHeads(h) {
  if (Array.isArray(h)) return h.map(Number);
  if (typeof h === 'string' && h.trim()) return h.split(/[,\s]+/).filter(Boolean).map(Number);
  return [];
}
/* Run-length text of a schedule: [3,3,6,6,8,8,12,12,12,12,12,12] -> "3×2 6×2 8×2 12×6". */
export function rle(heads) {
  const out = [];
  for (let i = 0; i < heads.length;) {
    let j = i;
    while (j < heads.length && heads[j] === heads[i]) j++;
    out.push(heads[i] + '×' + (j - i));
    i = j;
  }
  return out.join(' ');
}
/* A search candidate's train values (the leaderboard's `train`, "search.dims"): {lr: 0.0012} -> "lr=0.0012"; "" for none.
 * Three significant digits, as the server quantizes them and `prism-sweep leaderboard` prints them. */
export function trainWords(t) {
  if (!t || typeof t !== 'object') return '';
  return Object.keys(t).filter((k) => typeof t[k] === 'number').map((k) =>
    k + '=' + (Number.isInteger(t[k]) && Math.abs(t[k]) >= 1 ? String(t[k]) : String(Number(t[k].toPrecision(3))))).join(' ');
}
/* The schedule as a staircase: one column per layer, its height the layer's head count. */
export function staircase(heads, opts) {
  const o = Object.assign({ w: 6, h: 22, base: false }, opts || {});
  if (!heads.length) return '';
  const max = Math.max.apply(null, heads) || 1;
  const W = Math.round(heads.length * o.w), H = o.h;
  let d = 'M0,' + H;
  heads.forEach((v, i) => {
    const y = (H - (v / max) * (H - 2)).toFixed(1);
    d += ' L' + +(i * o.w).toFixed(1) + ',' + y + ' L' + +((i + 1) * o.w).toFixed(1) + ',' + y;
  });
  d += ' L' + W + ',' + H + ' Z';
  const colour = o.base ? 'var(--stair-base)' : 'var(--stair)';
  return '<svg class="stair" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H +
    '" role="img" aria-label="heads per layer ' + esc(heads.join(',')) + '"><title>heads per layer: ' +
    esc(heads.join(',')) + '</title><path d="' + d + '" fill="' + colour + '" fill-opacity="0.35" stroke="' +
    colour + '" stroke-width="1.2"/></svg>';
}
export function css(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}
export function withAlpha(colour, a) {
  const m = /^#([0-9a-f]{6})$/i.exec(colour);
  if (!m) return colour;
  const n = parseInt(m[1], 16);
  return 'rgba(' + (n >> 16) + ',' + ((n >> 8) & 255) + ',' + (n & 255) + ',' + a + ')';
}

/* One request answered with JSON; rejects with an Error whose .status is the HTTP status (0 = no answer) and
 * whose message is the server's `error` when it sent one. */
async function request(path, init) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), FETCH_TIMEOUT_MS);
  let res;
  try {
    res = await fetch(path, Object.assign({ signal: ctl.signal, cache: 'no-store' }, init));
  } catch (e) {
    const err = new Error(e.name === 'AbortError' ? 'no answer within ' + (FETCH_TIMEOUT_MS / 1000) + ' s' : 'connection failed');
    err.status = 0;
    throw err;
  } finally {
    clearTimeout(timer);
  }
  let body = null;
  try { body = await res.json(); } catch (e) { body = null; }
  if (!res.ok) {
    const err = new Error((body && body.error) || ('HTTP ' + res.status + ' for ' + path));
    err.status = res.status;
    throw err;
  }
  return body;
}

/* GET a JSON document. */
export function api(path) {
  return request(path, { headers: { Accept: 'application/json' } });
}

/* POST a JSON body with the admin token (in the Authorization header only: never in a URL). */
export function apiPost(path, body, token) {
  return request(path, { method: 'POST', body: JSON.stringify(body || {}),
    headers: { 'Content-Type': 'application/json', Accept: 'application/json', Authorization: 'Bearer ' + token } });
}
