/* forest.js — every schedule at once: the forest plot of Δ vs uniform with its interval, and the staircase
 * overlay of the schedules' head counts.
 *
 * Both are SVG drawn from the leaderboard rows (app.js scheduleRows, numbers as the API sent them: Δ =
 * delta.mean, the interval delta.ci_low..ci_high, the best group tied_best). They scale to their box (viewBox,
 * width 100%); on a box narrower than 640 px they are laid out at the box's own width (svgWidth), one unit a pixel, so
 * their 11 px text stays 11 px on a 420 px screen instead of shrinking with the drawing. Each mark carries its numbers as data-* attributes (the tests read
 * them; a <title> shows them on hover). A row or a line opens that schedule's detail.
 */
'use strict';

import { esc, fmtSigned, isNum, rle } from './util.js';
import { S } from './state.js';

/* the forest plot's layout at a width of W user units (640: the wide layout) */
function forestLayout(W) {
  return { W, left: Math.min(170, Math.round(W * 0.36)), right: W - 20, rowH: 20, top: 8, axis: 34 };
}

/* The SVGs' width in user units: the box's own width when it is narrower than 640 px (one unit one pixel, so the text
 * renders at its CSS size), else 640 (scaled up to the box, at most 760 px: the text grows, never shrinks). */
export function svgWidth(box) {
  const w = box ? box.clientWidth : 0;
  return w > 0 && w < 640 ? Math.max(240, Math.floor(w)) : 640;
}

function niceTicks(lo, hi, n) {
  const span = hi - lo || 1;
  const step0 = span / n, mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= step0) || step0;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
}

/* rows: leaderboard rows (ranked, not the baseline, with a Δ), in rank order; W the width in user units (svgWidth) */
export function forestSVG(rows, W) {
  const F = forestLayout(W || 640);
  if (!rows.length) return '';
  let lo = 0, hi = 0;
  rows.forEach((r) => {
    const d = r.delta;
    [d.mean, d.lo, d.hi].forEach((v) => { if (isNum(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
  });
  const pad = (hi - lo) * 0.06 || 1e-3;
  lo -= pad; hi += pad;
  const sx = (v) => F.left + (v - lo) / (hi - lo) * (F.right - F.left);
  const H = F.top + rows.length * F.rowH + F.axis;
  const yAxis = F.top + rows.length * F.rowH;
  let s = '<svg id="forest" class="forest" viewBox="0 0 ' + F.W + ' ' + H + '" width="100%" role="img" ' +
    'aria-label="forest plot of the seed-paired delta vs uniform with its 95% CI" data-dmin="' + lo + '" data-dmax="' + hi + '" data-x0="' + F.left +
    '" data-x1="' + F.right + '">';
  niceTicks(lo, hi, 5).forEach((t) => {
    const x = sx(t).toFixed(2);
    s += '<line class="grid" x1="' + x + '" x2="' + x + '" y1="' + F.top + '" y2="' + yAxis + '"/>' +
      '<text class="tick" x="' + x + '" y="' + (yAxis + 14) + '" text-anchor="middle">' + esc(fmtSigned(t, Math.max(0, 3 - Math.floor(Math.log10(Math.abs(hi - lo)))))) + '</text>';
  });
  s += '<line class="zero" x1="' + sx(0).toFixed(2) + '" x2="' + sx(0).toFixed(2) + '" y1="' + (F.top - 4) + '" y2="' + yAxis + '"/>' +
    '<text class="axis-title" x="' + ((F.left + F.right) / 2) + '" y="' + (yAxis + 30) + '" text-anchor="middle">Δ val loss vs uniform, paired by seed, 95% CI (← better)</text>';
  rows.forEach((r, i) => {
    const d = r.delta, y = F.top + i * F.rowH + F.rowH / 2;
    const hasCI = isNum(d.lo) && isNum(d.hi);
    const cls = 'forest-row' + (r.tied_best ? ' tied' : '') + (d.significant ? (d.mean < 0 ? ' better' : ' worse') : '') +
      (String(r.schedule_id) === String(S.scheduleId) ? ' selected' : '');
    s += '<g class="' + cls + '" data-schedule="' + esc(r.schedule_id) + '" data-heads="' + esc(r.heads.join(',')) +
      '" data-mean="' + d.mean + '" data-lo="' + (hasCI ? d.lo : '') + '" data-hi="' + (hasCI ? d.hi : '') +
      '" data-tied="' + (r.tied_best ? 1 : 0) + '"><title>' + esc(r.heads.join(',')) + ': Δ ' + String(d.mean) +
      (hasCI ? ' [' + String(d.lo) + ', ' + String(d.hi) + '] (95% CI)' : ' (one seed: no interval)') +
      (isNum(d.p_holm) ? ' · p_Holm ' + String(d.p_holm) + (d.significant ? (d.mean < 0 ? ' ▲' : ' ▼') : '') : '') + (r.tied_best ? ' · best group =' : '') +
      '</title><rect class="hit" x="0" y="' + (y - F.rowH / 2) + '" width="' + F.W + '" height="' + F.rowH + '"/>' +
      '<text class="lbl" x="' + (F.left - 8) + '" y="' + (y + 4) + '" text-anchor="end">' + esc((r.rank ? r.rank + '. ' : '') + rle(r.heads)) +
      (r.tied_best ? ' =' : '') + (d.significant ? '<tspan class="sig">' + (d.mean < 0 ? ' ▲' : ' ▼') + '</tspan>' : '') + '</text>' +
      (hasCI ? '<line class="ci" x1="' + sx(d.lo).toFixed(3) + '" x2="' + sx(d.hi).toFixed(3) + '" y1="' + y + '" y2="' + y + '"/>' : '') +
      '<circle class="pt" cx="' + sx(d.mean).toFixed(3) + '" cy="' + y + '" r="4"/></g>';
  });
  return s + '</svg>';
}

/* The schedules' head counts as one stepped line each: picked schedules in their overlay colour, the baseline
 * dashed, the rest faint. */
export function stairsSVG(rows, colourOf, Wu) {
  const list = rows.filter((r) => r.heads.length);
  if (!list.length) return '';
  const L = Math.max.apply(null, list.map((r) => r.heads.length));
  const maxH = Math.max.apply(null, list.map((r) => Math.max.apply(null, r.heads)));
  const W = Wu || 640, H = 200, l = 36, rgt = W - 10, top = 10, bot = 170;
  const sx = (i) => l + i / L * (rgt - l), sy = (h) => bot - h / maxH * (bot - top);
  let s = '<svg id="stairs" class="stairs" viewBox="0 0 ' + W + ' ' + H + '" width="100%" role="img" aria-label="head schedules overlaid">';
  niceTicks(0, maxH, 4).forEach((t) => {
    s += '<line class="grid" x1="' + l + '" x2="' + rgt + '" y1="' + sy(t) + '" y2="' + sy(t) + '"/><text class="tick" x="' + (l - 4) +
      '" y="' + (sy(t) + 4) + '" text-anchor="end">' + t + '</text>';
  });
  for (let i = 0; i < L; i++) s += '<text class="tick" x="' + ((sx(i) + sx(i + 1)) / 2) + '" y="' + (bot + 14) + '" text-anchor="middle">' + (i + 1) + '</text>';
  s += '<text class="axis-title" x="' + ((l + rgt) / 2) + '" y="' + (bot + 28) + '" text-anchor="middle">layer (heads per layer)</text>';
  const order = list.slice().sort((a, b) => (colourOf(a) ? 1 : 0) - (colourOf(b) ? 1 : 0));   // picked ones on top
  order.forEach((r) => {
    let d = '';
    r.heads.forEach((h, i) => { d += (i ? ' L' : 'M') + sx(i).toFixed(1) + ',' + sy(h).toFixed(1) + ' L' + sx(i + 1).toFixed(1) + ',' + sy(h).toFixed(1); });
    const c = colourOf(r);
    s += '<path class="stair-line' + (c ? ' picked' : '') + (r.is_baseline ? ' base' : '') + '" data-schedule="' + esc(r.schedule_id) +
      '" data-heads="' + esc(r.heads.join(',')) + '" d="' + d + '"' + (c ? ' style="stroke:' + c + '"' : '') + '><title>' +
      esc(r.heads.join(',')) + '</title></path>';
  });
  return s + '</svg>';
}
