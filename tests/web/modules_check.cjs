/* modules_check.cjs — the page's scripts are ES modules that share nothing through the global scope.
 *
 * Usage: NODE_PATH=/usr/share/nodejs node tests/web/modules_check.cjs WEB_DIR [--imports]   (exit 0: clean; 1: each problem on stderr)
 *
 * Design: index.html must load exactly one `<script type="module" src=...>` (the entry) and, besides it, only
 * Chart.js's classic script (/vendor/chart.js/...) and inline classic scripts; every WEB_DIR/*.js is parsed as a
 * module (Debian's acorn), its scopes resolved (Debian's eslint-scope), and every reference left unresolved at
 * module level must be an ECMAScript or browser builtin (Debian's `globals` lists, less the browser globals that
 * are easy to use by mistake: `name`, `status`, `event`, `top`, ...) or `Chart`. A write to an unresolved name,
 * an assignment to a property of window/globalThis/self, Object.assign/defineProperty on one of them, an import
 * of a file outside WEB_DIR or of a name the file does not export, an import across a cycle of anything but a
 * function declaration (a const read before its module ran throws), and a .js file the entry does not reach are
 * each reported with file:line and what to do. --imports prints, per file, the names it would need to import and
 * the file that exports each (a help when splitting a file).
 */
'use strict';
const fs = require('fs');
const path = require('path');
/* Debian's node-acorn, node-eslint-scope and node-globals live in /usr/share/nodejs, which a node not built by
 * Debian does not search: the test runs this with NODE_PATH=/usr/share/nodejs */
function dep(m) {
  try { return require(m); } catch (e) {
    if (e.code !== 'MODULE_NOT_FOUND') throw e;
    console.error('modules_check: ' + e.message.split('\n')[0] + ': run `make deps` (Debian node-acorn, node-eslint-scope, ' +
      'node-globals) and set NODE_PATH=/usr/share/nodejs');
    process.exit(2);
  }
}
const acorn = dep('acorn');
const walk = dep('acorn-walk');
const eslintScope = dep('eslint-scope');
const globals = dep('globals');

const CONFUSING = new Set(['addEventListener', 'blur', 'close', 'closed', 'confirm', 'defaultStatus', 'defaultstatus',
  'event', 'external', 'find', 'focus', 'frameElement', 'frames', 'history', 'innerHeight', 'innerWidth', 'length',
  'location', 'locationbar', 'menubar', 'moveBy', 'moveTo', 'name', 'onblur', 'onerror', 'onfocus', 'onload',
  'onresize', 'onunload', 'open', 'opener', 'opera', 'outerHeight', 'outerWidth', 'pageXOffset', 'pageYOffset',
  'parent', 'print', 'prompt', 'removeEventListener', 'resizeBy', 'resizeTo', 'screen', 'screenLeft', 'screenTop',
  'screenX', 'screenY', 'scroll', 'scrollbars', 'scrollBy', 'scrollTo', 'scrollX', 'scrollY', 'self', 'status',
  'statusbar', 'stop', 'toolbar', 'top']);
const GLOBAL_OBJECTS = new Set(['window', 'globalThis', 'self', 'top', 'parent', 'frames']);
const ALLOWED = new Set(['Chart']);
[globals.builtin, globals.es2021 || {}, globals.browser].forEach((g) => Object.keys(g).forEach((k) => { if (!CONFUSING.has(k)) ALLOWED.add(k); }));

const problems = [];
const report = (file, node, text) => problems.push(file + ':' + (node && node.loc ? node.loc.start.line : 1) + ': ' + text);

function parseModule(dir, file) {
  const src = fs.readFileSync(path.join(dir, file), 'utf8');
  try {
    return acorn.parse(src, { ecmaVersion: 2022, sourceType: 'module', locations: true, ranges: true });
  } catch (e) {
    report(file, null, 'does not parse as an ES module: ' + e.message);
    return null;
  }
}

/* the names a module exports (export function/const/let/class, export { a as b }); out.functions: those that are
 * function declarations (initialised before any module of a cycle runs) */
function exportsOf(ast) {
  const out = new Set();
  out.functions = new Set();
  ast.body.forEach((n) => {
    if (n.type !== 'ExportNamedDeclaration') return;
    if (n.declaration) {
      const d = n.declaration;
      if (d.id) out.add(d.id.name);
      if (d.type === 'FunctionDeclaration') out.functions.add(d.id.name);
      (d.declarations || []).forEach((v) => { if (v.id.type === 'Identifier') out.add(v.id.name); });
    }
    (n.specifiers || []).forEach((s) => out.add(s.exported.name));
  });
  return out;
}

/* index.html's scripts: the module entry (file name) or null, with problems reported */
function entryOf(dir) {
  const html = fs.readFileSync(path.join(dir, 'index.html'), 'utf8');
  const tags = html.match(/<script\b[^>]*>/gi) || [];
  const entries = [];
  tags.forEach((t) => {
    const src = /\bsrc="([^"]*)"/i.exec(t), mod = /\btype="module"/i.test(t);
    if (mod && src) entries.push(src[1]);
    else if (mod) report('index.html', null, 'an inline module script: put it in a file of its own and import it from the entry');
    else if (src && !/^\/vendor\/chart\.js\//.test(src[1]))
      report('index.html', null, 'classic script ' + src[1] + ': load it as an ES module imported by the entry');
  });
  if (entries.length !== 1) {
    report('index.html', null, entries.length + ' module scripts (' + entries.join(', ') + '): load exactly one entry with <script type="module">');
    return null;
  }
  return entries[0].replace(/^\.?\//, '');
}

function checkFile(dir, file, ast, exported, need) {
  const mgr = eslintScope.analyze(ast, { ecmaVersion: 2022, sourceType: 'module' });
  const globalScope = mgr.globalScope;
  globalScope.through.forEach((ref) => {
    const id = ref.identifier, n = id.name;
    if (ref.isWrite()) { report(file, id, 'assigns to `' + n + '`, which no scope of the module declares (an implicit global): declare it, or export it from a module'); return; }
    if (ALLOWED.has(n)) return;
    need.add(n);
    const from = Object.keys(exported).filter((f) => exported[f].has(n));
    report(file, id, '`' + n + '` is not declared or imported here' + (CONFUSING.has(n) ? ' (a browser global that is easy to use by mistake: write window.' + n + ')' : '') +
      (from.length ? ': import it from ./' + from[0] : ': declare it, or export it from the module that defines it and import it'));
  });
  const isGlobalObject = (o) => o && o.type === 'Identifier' && GLOBAL_OBJECTS.has(o.name) && !declaredAt(mgr, o);
  const rootOf = (m) => { while (m && m.type === 'MemberExpression') m = m.object; return m; };
  walk.full(ast, (node) => {
    if ((node.type === 'AssignmentExpression' && node.left.type === 'MemberExpression') ||
        (node.type === 'UpdateExpression' && node.argument.type === 'MemberExpression')) {
      const m = node.left || node.argument;
      if (isGlobalObject(m.object)) report(file, node, 'assigns ' + m.object.name + '.' + (m.property.name || '[…]') + ': a global shared between files; export it instead');
    }
    if (node.type === 'CallExpression' && node.callee.type === 'MemberExpression' && node.arguments.length &&
        /^(Object|Reflect)$/.test(node.callee.object.name || '') && /^(assign|defineProperty|defineProperties|set)$/.test(node.callee.property.name || '') &&
        isGlobalObject(rootOf(node.arguments[0])))
      report(file, node, node.callee.object.name + '.' + node.callee.property.name + ' on ' + rootOf(node.arguments[0]).name + ': a global shared between files; export it instead');
  });
}
function declaredAt(mgr, id) {
  for (let s = mgr.acquire(id, true); s; s = s.upper) if (s.set && s.set.has(id.name) && s.type !== 'global') return true;
  return false;
}

function checkImports(dir, file, ast, exported, files, edges) {
  ast.body.forEach((n) => {
    if (n.type !== 'ImportDeclaration' && !(n.type === 'ExportNamedDeclaration' && n.source) && n.type !== 'ExportAllDeclaration') return;
    const spec = n.source.value;
    const target = /^\.\/[A-Za-z0-9_-]+\.m?js$/.test(spec) ? spec.slice(2) : null;
    if (!target || !files.includes(target)) { report(file, n, 'imports "' + spec + '": only ./NAME.js of this folder (no bare names, no other folders)'); return; }
    edges.push({ target, node: n });
    (n.specifiers || []).forEach((s) => {
      if (s.type !== 'ImportSpecifier') return;
      const name = s.imported.name;
      if (!exported[target].has(name)) report(file, s, 'imports `' + name + '` from ./' + target + ', which does not export it');
    });
  });
}

function main() {
  const dir = process.argv[2];
  const showImports = process.argv.includes('--imports');
  if (!dir) { console.error('usage: node modules_check.cjs WEB_DIR [--imports]'); process.exit(2); }
  const files = fs.readdirSync(dir).filter((f) => /\.m?js$/.test(f)).sort();
  const asts = {}, exported = {};
  files.forEach((f) => { asts[f] = parseModule(dir, f); exported[f] = asts[f] ? exportsOf(asts[f]) : new Set(); });
  const entry = entryOf(dir);
  if (entry && !files.includes(entry)) report('index.html', null, 'the module entry ' + entry + ' is not a file of ' + dir);
  const graph = {};
  files.forEach((f) => {
    if (!asts[f]) return;
    const need = new Set(), edges = [];
    checkFile(dir, f, asts[f], exported, need);
    checkImports(dir, f, asts[f], exported, files, edges);
    graph[f] = edges;
    if (showImports && need.size) {
      const by = {};
      need.forEach((n) => { const from = files.find((g) => g !== f && exported[g].has(n)) || '?'; (by[from] = by[from] || []).push(n); });
      Object.keys(by).forEach((g) => console.log(f + ": import { " + by[g].sort().join(', ') + " } from './" + g + "';"));
    }
  });
  const reach = (from) => {
    const seen = new Set([from]), todo = [from];
    while (todo.length) (graph[todo.pop()] || []).forEach((e) => { if (!seen.has(e.target)) { seen.add(e.target); todo.push(e.target); } });
    return seen;
  };
  if (entry && graph[entry]) {
    const seen = reach(entry);
    files.filter((f) => !seen.has(f)).forEach((f) => report(f, null, 'not reached from the entry ' + entry + ' by imports: the page never loads it (import it, or delete it)'));
  }
  /* across an import cycle only function declarations: a const or let of a module that has not run yet throws */
  Object.keys(graph).forEach((f) => graph[f].forEach((e) => {
    if (!reach(e.target).has(f)) return;
    (e.node.specifiers || []).forEach((sp) => {
      if (sp.type === 'ImportSpecifier' && exported[e.target].has(sp.imported.name) && !exported[e.target].functions.has(sp.imported.name))
        report(f, sp, 'imports `' + sp.imported.name + '` from ./' + e.target + ', which imports this file back (a cycle), and it is not a ' +
          'function declaration: it may be read before ./' + e.target + ' has run; move it to a module outside the cycle (state.js, util.js)');
    });
  }));
  problems.forEach((p) => console.error(p));
  if (problems.length) { console.error(problems.length + ' problem(s) in ' + dir); process.exit(1); }
  console.log('ok: ' + files.length + ' modules, entry ' + entry + ', no shared globals');
}
main();
