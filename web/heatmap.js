/* heatmap.js — the layer × schedule heatmap of the attention distance D_l (rows' attn_distance) or of ΔD_l
 * (rows' delta_attn_distance: the schedule's D_l minus uniform's), one row per schedule in rank order.
 *
 * SVG scaled to its box. D_l uses a sequential scale from 0 to the largest value; ΔD_l a diverging one
 * symmetric about 0 (blue: more local than uniform, orange: longer range), drawn as a colour bar under the cells
 * with its two ends' numbers. Every cell carries data-value (the number the API sent) and a <title>; a schedule
 * without the values gets an empty row saying so.
 */
'use strict';

import { esc, fmt, isNum, rle } from './util.js';

function heatColour(v, max, diverging) {
  if (!isNum(v)) return 'transparent';
  if (!diverging) {
    const t = max > 0 ? Math.max(0, Math.min(1, v / max)) : 0;
    return 'hsl(220, 70%, ' + (92 - 55 * t).toFixed(1) + '%)';
  }
  const t = max > 0 ? Math.max(-1, Math.min(1, v / max)) : 0;
  return t < 0 ? 'hsl(215, 80%, ' + (96 + 46 * t).toFixed(1) + '%)' : 'hsl(25, 90%, ' + (96 - 46 * t).toFixed(1) + '%)';
}

/* rows in display order; mode 'd' (D_l) or 'dd' (ΔD_l); Wu the width in user units (forest.js svgWidth) */
export function heatmapSVG(rows, mode, Wu) {
  const key = mode === 'dd' ? 'dattn' : 'attn';
  const list = rows.filter((r) => !(mode === 'dd' && r.is_baseline));
  const L = Math.max(0, ...list.map((r) => (r[key] ? r[key].length : 0)), ...list.map((r) => r.heads.length));
  if (!list.length || !L) return '';
  const vals = [];
  list.forEach((r) => (r[key] || []).forEach((v) => { if (isNum(v)) vals.push(Math.abs(v)); }));
  if (!vals.length) return '';
  const max = Math.max.apply(null, vals);
  const W = Wu || 640, left = Math.min(170, Math.round(W * 0.36)), right = W - 10, rowH = 18, top = 18;
  const cw = (right - left) / L, H = top + list.length * rowH + 38;
  let s = '<svg id="heatmap" class="heatmap" data-mode="' + mode + '" viewBox="0 0 ' + W + ' ' + H + '" width="100%" role="img" aria-label="' +
    (mode === 'dd' ? 'delta attention distance' : 'attention distance') + ' by layer and schedule">';
  for (let l = 0; l < L; l++) s += '<text class="tick" x="' + (left + (l + 0.5) * cw).toFixed(1) + '" y="12" text-anchor="middle">' + (l + 1) + '</text>';
  list.forEach((r, i) => {
    const y = top + i * rowH;
    const v = r[key];
    s += '<g class="hm-row" data-schedule="' + esc(r.schedule_id) + '" data-heads="' + esc(r.heads.join(',')) + '">' +
      '<text class="lbl" x="' + (left - 8) + '" y="' + (y + 13) + '" text-anchor="end">' + esc(rle(r.heads)) + (r.is_baseline ? ' (uniform)' : '') + '</text>';
    if (!v) {
      s += '<text class="tick" x="' + (left + 4) + '" y="' + (y + 13) + '">no Dₗ yet</text>';
    } else {
      v.forEach((x, l) => {
        s += '<rect class="hm-cell" data-layer="' + (l + 1) + '" data-value="' + (isNum(x) ? x : '') + '" x="' + (left + l * cw).toFixed(2) +
          '" y="' + y + '" width="' + (cw - 1).toFixed(2) + '" height="' + (rowH - 2) + '" fill="' + heatColour(x, max, mode === 'dd') +
          '"><title>' + esc(r.heads.join(',')) + ' layer ' + (l + 1) + ' (' + esc(r.heads[l]) + ' heads): ' + (mode === 'dd' ? 'ΔD ' : 'D ') +
          (isNum(x) ? String(x) : '—') + '</title></rect>';
      });
    }
    s += '</g>';
  });
  /* the colour bar: the scale's colours from its low end to its high end (the cells' heatColour at 11 points), the
   * numbers of its two ends under it */
  const yb = top + list.length * rowH + 4, dd = mode === 'dd', lo = dd ? -max : 0;
  s += '<defs><linearGradient id="hm-grad" x1="0" x2="1" y1="0" y2="0">';
  for (let k = 0; k <= 10; k++) {
    const v = lo + (max - lo) * k / 10;
    s += '<stop class="hm-stop" offset="' + (k * 10) + '%" data-value="' + v + '" stop-color="' + heatColour(v, max, dd) + '"/>';
  }
  s += '</linearGradient></defs><rect id="hm-bar" class="hm-bar" x="' + left + '" y="' + yb + '" width="' + (right - left) +
    '" height="8" fill="url(#hm-grad)" data-min="' + lo + '" data-max="' + max + '"><title>colour scale: ' +
    (dd ? 'ΔDₗ from −' + fmt(max, 1) + ' (more local than uniform) to +' + fmt(max, 1) + ' (longer range)'
        : 'Dₗ from 0 to ' + fmt(max, 1) + ' tokens') + '</title></rect>';
  const yl = yb + 22;
  s += '<text class="tick" x="' + left + '" y="' + yl + '">' + (mode === 'dd' ? '−' + fmt(max, 1) + ' (more local)' : '0') + '</text>' +
    '<text class="tick" x="' + right + '" y="' + yl + '" text-anchor="end">' + (mode === 'dd' ? '+' + fmt(max, 1) + ' (longer range)' : fmt(max, 1) + ' tokens') + '</text>' +
    '<text class="axis-title" x="' + (left - 8) + '" y="12" text-anchor="end">layer</text>';
  return s + '</svg>';
}
