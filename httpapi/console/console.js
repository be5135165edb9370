// sharebroker console: plain JS, no framework, no build step. It reads the
// broker's JSON endpoints on this origin and keeps each view live through
// one event stream (GET /v1/events, read with fetch because EventSource
// cannot send an Authorization header). Every value from the broker goes
// into the page as text (textContent), never as markup.
'use strict';

const TOKEN_KEY = 'sharebroker.token';
const CONSOLE_HEADER = 'X-Sharebroker-Console';
const RECORD_ROWS = 200;   // a window of at most this many offsets is drawn record by record
const RANGE_ROWS = 500;    // at most this many ranges are listed; the strip shows them all
const PAGE = 50;           // records per page in the topic view

const $ = (id) => document.getElementById(id);
let token = sessionStorage.getItem(TOKEN_KEY) || '';
let testAPI = null;         // true, false, or null until probed
let brokerNowMs = null;     // the broker clock, from the stream's clock events
let stream = null;          // AbortController of the open event stream
let route = null;           // the parsed hash
let views = {};             // watched path -> {status, body}
let records = null;         // the topic view's record page
let hexValues = false;
let renderQueued = false;

// What the browser tests read: renders done, the last one's duration in
// milliseconds and the bytes of the last view event.
window.__console = { renders: 0, lastRenderMs: 0, maxRenderMs: 0, lastViewBytes: 0, streamOpen: false };

// h builds an element: attrs are properties or attributes, kids are
// nodes or strings (as text).
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : String(kid));
  }
  return el;
}

const enc = encodeURIComponent;
const link = (href, text) => h('a', { href }, text);
const topicHref = (t, p, o) => '#/topics/' + enc(t) + (p === undefined ? '' : '?partition=' + p + (o === undefined ? '' : '&offset=' + o));
const groupHref = (g) => (g.type === 'share' ? '#/share-groups/' : '#/groups/') + enc(g.group_id);
const storyPath = (g, t, p, o) => '/v1/share-groups/' + enc(g) + '/topics/' + enc(t) + '/partitions/' + p + '/records/' + o;
const storyHref = (g, t, p, o) => '#' + storyPath(g, t, p, o).slice(3);
const stateBadge = (s) => h('span', { class: 'state ' + s, text: s });
const num = (v) => h('td', { class: 'num', text: v === undefined || v === null ? '—' : String(v) });
const td = (...kids) => h('td', null, ...kids);
function table(headers, rows, caption) {
  return h('table', null, caption ? h('caption', { class: 'muted', text: caption }) : null,
    h('thead', null, h('tr', null, headers.map((x) => h('th', { scope: 'col', text: x })))),
    h('tbody', null, rows));
}

function authHeaders(extra) {
  const hd = Object.assign({}, extra);
  if (token) hd.Authorization = 'Bearer ' + token;
  return hd;
}

async function getJSON(path) {
  const r = await fetch(path, { headers: authHeaders() });
  let body = null;
  try { body = await r.json(); } catch (_) { /* not JSON: the status says enough */ }
  return { status: r.status, body };
}

async function send(method, path, body) {
  const r = await fetch(path, {
    method,
    headers: authHeaders({ 'Content-Type': 'application/json', [CONSOLE_HEADER]: '1' }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let out = null;
  try { out = await r.json(); } catch (_) { /* empty */ }
  return { status: r.status, body: out };
}

function say(text) { $('live').textContent = text; }

// ---- routing ----

function parseRoute() {
  let hash = location.hash.slice(1);
  if (hash.startsWith('token=')) {
    token = decodeURIComponent(hash.slice(6));
    sessionStorage.setItem(TOKEN_KEY, token);
    history.replaceState(null, '', '#/');
    hash = '/';
  }
  const [path, query] = hash.split('?');
  const parts = (path || '/').split('/').filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(query || '');
  const r = { name: 'overview', parts, params, watch: ['/v1/cluster', '/v1/topics', '/v1/groups'] };
  if (parts[0] === 'topics' && parts.length === 2) {
    Object.assign(r, { name: 'topic', topic: parts[1], watch: ['/v1/topics/' + enc(parts[1])] });
  } else if (parts[0] === 'groups' && parts.length === 2) {
    Object.assign(r, { name: 'group', group: parts[1], watch: ['/v1/groups/' + enc(parts[1])] });
  } else if (parts[0] === 'share-groups' && parts.length === 2) {
    Object.assign(r, { name: 'share', group: parts[1], watch: ['/v1/share-groups/' + enc(parts[1])] });
  } else if (parts[0] === 'share-groups' && parts.length === 8 && parts[2] === 'topics' && parts[4] === 'partitions' && parts[6] === 'records') {
    Object.assign(r, { name: 'story', group: parts[1], topic: parts[3], partition: +parts[5], offset: +parts[7] });
    r.watch = [storyPath(r.group, r.topic, r.partition, r.offset)];
  } else if (parts.length > 0) {
    r.name = 'unknown';
    r.watch = [];
  }
  return r;
}

function navigate() {
  const prev = route;
  route = parseRoute();
  const sameView = prev && prev.name === route.name && prev.watch.join() === route.watch.join();
  if (!sameView) {
    views = {};
    records = null;
    openStream(route.watch);
    renderActions();
  }
  if (route.name === 'topic') loadRecords();
  render();
  if (!sameView) $('main').focus({ preventScroll: true });
}

// ---- the event stream ----

function openStream(paths) {
  if (stream) stream.abort();
  stream = null;
  if (paths.length === 0) return;
  const ctl = new AbortController();
  stream = ctl;
  readStream(paths, ctl, 0);
}

async function readStream(paths, ctl, failures) {
  const url = '/v1/events?' + paths.map((p) => 'watch=' + enc(p)).join('&');
  try {
    const r = await fetch(url, { headers: authHeaders(), signal: ctl.signal });
    if (!r.ok) {
      let msg = '';
      try { msg = (await r.json()).error; } catch (_) { msg = r.statusText; }
      if (r.status === 401) msg = 'the broker wants a bearer token: enter it above (or open the console with #token=...)';
      for (const p of paths) views[p] = { status: r.status, body: { error: msg }, streamError: true };
      render();
      if (r.status < 500 && r.status !== 429) return; // asking again would get the same answer
      throw new Error(msg);
    }
    window.__console.streamOpen = true;
    say('live');
    failures = 0;
    const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        handleEvent(buf.slice(0, i));
        buf = buf.slice(i + 2);
      }
    }
  } catch (e) {
    if (ctl.signal.aborted) return;
    failures++;
  }
  window.__console.streamOpen = false;
  if (ctl.signal.aborted || stream !== ctl) return;
  say('reconnecting…');
  setTimeout(() => { if (stream === ctl) readStream(paths, ctl, failures); }, Math.min(5000, 250 * 2 ** failures));
}

function handleEvent(chunk) {
  let event = 'message';
  const data = [];
  for (const line of chunk.split('\n')) {
    if (line.startsWith('event:')) event = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  if (data.length === 0) return;
  const text = data.join('\n');
  const msg = JSON.parse(text);
  if (event === 'clock') {
    brokerNowMs = Date.parse(msg.now);
    $('clock').textContent = 'broker clock: ' + msg.now;
    updateCountdowns();
  } else if (event === 'view') {
    window.__console.lastViewBytes = text.length;
    views[msg.path] = { status: msg.status, body: msg.body };
    if (msg.body && msg.body.now) brokerNowMs = Date.parse(msg.body.now);
    if (route && route.name === 'topic' && !route.params.has('offset')) loadRecords();
    scheduleRender();
  }
}

function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => { renderQueued = false; render(); });
}

// ---- rendering ----

function render() {
  const t0 = performance.now();
  const view = $('view');
  // Keep the keyboard focus on the same link across a live re-render.
  const active = document.activeElement;
  const focusKey = active && view.contains(active) ? active.getAttribute('href') || active.id : null;
  const out = h('div');
  try {
    ({ overview: renderOverview, topic: renderTopic, group: renderGroup, share: renderShare, story: renderStory,
      unknown: () => [h('h1', { text: 'Not a view' }), h('p', null, 'Nothing is shown at this address. ', link('#/', 'Go to the overview'))] })[route.name](out);
  } catch (e) {
    out.replaceChildren(h('p', { class: 'error', text: 'This view could not be drawn: ' + e.message }));
    console.warn(e);
  }
  view.replaceChildren(...out.childNodes);
  if (focusKey) {
    const again = [...view.querySelectorAll('a, [id]')].find((el) => (el.getAttribute('href') || el.id) === focusKey);
    if (again) again.focus({ preventScroll: true });
  }
  drawStrips();
  updateCountdowns();
  const ms = performance.now() - t0;
  window.__console.renders++;
  window.__console.lastRenderMs = ms;
  window.__console.maxRenderMs = Math.max(window.__console.maxRenderMs, ms);
}

// viewOf returns the body of watched path, or appends what is missing
// (loading, an error) to out and returns null.
function viewOf(out, path, what) {
  const v = views[path];
  if (!v) { out.append(h('p', { class: 'muted', text: 'Loading ' + what + '…' })); return null; }
  if (v.status !== 200) {
    out.append(h('p', { class: 'error', text: what + ': ' + (v.body && v.body.error ? v.body.error : 'HTTP ' + v.status) }));
    return null;
  }
  return v.body;
}

function renderOverview(out) {
  out.append(h('h1', { text: 'Overview' }));
  const cluster = viewOf(out, '/v1/cluster', 'the cluster');
  if (cluster) {
    const leaders = {}, coords = {};
    for (const p of cluster.partitions || []) leaders[p.leader] = (leaders[p.leader] || 0) + 1;
    for (const c of cluster.coordinators || []) coords[c.node] = (coords[c.node] || 0) + 1;
    out.append(h('h2', { text: 'Nodes' }), table(['Node', 'Address', 'State', 'Leaders held', 'Coordinators'],
      (cluster.nodes || []).map((n) => h('tr', null, num(n.id), td(h('span', { class: 'mono', text: n.addr })),
        td(h('span', { class: 'state ' + (n.up ? 'up' : 'down'), text: n.up ? 'up' : 'down' })),
        num(leaders[n.id] || 0), num(coords[n.id] || 0)))));
  }
  const topics = viewOf(out, '/v1/topics', 'topics');
  if (topics) {
    out.append(h('h2', { text: 'Topics' }));
    if (topics.topics.length === 0) out.append(h('p', { class: 'muted', text: 'No topics yet.' }));
    else out.append(table(['Topic', 'Partitions', 'Records'], topics.topics.map((t) => h('tr', null,
      td(link(topicHref(t.name), t.name)), num(t.partitions.length),
      num(t.partitions.reduce((n, p) => n + p.high_watermark - p.log_start_offset, 0))))));
  }
  const groups = viewOf(out, '/v1/groups', 'groups');
  if (groups) {
    out.append(h('h2', { text: 'Groups' }));
    if (groups.groups.length === 0) out.append(h('p', { class: 'muted', text: 'No groups yet.' }));
    else out.append(table(['Group', 'Type', 'State', 'Members'], groups.groups.map((g) => h('tr', null,
      td(link(groupHref(g), g.group_id)), td(g.type), td(g.state), num(g.members.length)))));
  }
}

function renderTopic(out) {
  const t = viewOf(out, route.watch[0], 'topic ' + route.topic);
  out.prepend(h('h1', { text: 'Topic ' + route.topic }));
  if (!t) return;
  out.append(h('p', { class: 'muted' }, 'ID ', h('span', { class: 'mono', text: t.id })));
  out.append(h('h2', { text: 'Partitions' }), table(['Partition', 'Log start', 'High watermark', 'Last stable', 'Leader', 'Leader epoch', ''],
    t.partitions.map((p) => h('tr', null, num(p.partition), num(p.log_start_offset), num(p.high_watermark),
      num(p.last_stable_offset), num(p.leader), num(p.leader_epoch), td(link(topicHref(t.name, p.partition), 'records'))))));
  const part = +(route.params.get('partition') || 0);
  out.append(h('h2', { text: 'Records of partition ' + part }));
  if (!records) { out.append(h('p', { class: 'muted', text: 'Loading records…' })); return; }
  if (records.status !== 200) { out.append(h('p', { class: 'error', text: records.body ? records.body.error : 'HTTP ' + records.status })); return; }
  const page = records.body;
  const from = page.offset;
  out.append(h('p', { class: 'pager' },
    link(topicHref(t.name, part, page.log_start_offset), 'First'),
    link(topicHref(t.name, part, Math.max(page.log_start_offset, from - PAGE)), 'Previous'),
    link(topicHref(t.name, part, page.next_offset), 'Next'),
    link(topicHref(t.name, part), 'Latest'),
    h('button', { type: 'button', id: 'hex-toggle', onclick: () => { hexValues = !hexValues; render(); } },
      hexValues ? 'Show text' : 'Show hex'),
    h('span', { class: 'muted', text: `offsets ${from} to ${page.next_offset - 1} of [${page.log_start_offset}, ${page.high_watermark})` })));
  if (page.records.length === 0) { out.append(h('p', { class: 'muted', text: 'No records here.' })); return; }
  out.append(table(['Offset', 'Timestamp', 'Key', 'Value', 'Headers'], page.records.map((r) => h('tr', null,
    num(r.offset), td(h('span', { class: 'mono', text: r.timestamp })),
    h('td', { class: 'data', text: shown(r.key, r.key_text) }), h('td', { class: 'data', text: shown(r.value, r.value_text) }),
    h('td', { class: 'data', text: r.headers.map((x) => x.key + '=' + shown(x.value, x.value_text)).join('\n') })))));
}

// shown is bytes as text when they are UTF-8 and the user wants text,
// else as hex.
function shown(b64, text) {
  if (b64 === null || b64 === undefined) return 'null';
  if (!hexValues && text !== undefined && text !== null) return text;
  const bin = atob(b64);
  let hex = '';
  for (let i = 0; i < bin.length; i++) hex += bin.charCodeAt(i).toString(16).padStart(2, '0') + (i % 16 === 15 ? '\n' : ' ');
  return hex.trim();
}

let recordsSeq = 0;
async function loadRecords() {
  const part = +(route.params.get('partition') || 0);
  const offset = route.params.get('offset');
  const path = '/v1/topics/' + enc(route.topic) + '/partitions/' + part + '/records?max=' + PAGE + (offset !== null ? '&offset=' + enc(offset) : '');
  const seq = ++recordsSeq;
  try {
    const r = await getJSON(path);
    if (seq === recordsSeq) { records = r; scheduleRender(); }
  } catch (e) { /* the stream's reconnect shows the broker is gone */ }
}

function renderGroup(out) {
  out.append(h('h1', { text: 'Group ' + route.group }));
  const d = viewOf(out, route.watch[0], 'group ' + route.group);
  if (!d) return;
  const g = d.group;
  if (g.type === 'share') out.append(h('p', null, 'A share group: ', link('#/share-groups/' + enc(g.group_id), 'its share partitions')));
  out.append(facts([['Type', g.type], ['State', g.state], ['Protocol type', g.protocol_type], ['Group epoch', g.type === 'classic' ? null : g.group_epoch],
    ['Assignor', g.assignor]]));
  out.append(h('h2', { text: 'Members' }), members(g));
  if (g.type === 'share') return;
  out.append(h('h2', { text: 'Committed offsets' }));
  if (d.offsets.length === 0) { out.append(h('p', { class: 'muted', text: 'Nothing committed.' })); return; }
  out.append(table(['Topic', 'Partition', 'Committed', 'Log end', 'Lag'], d.offsets.map((o) => h('tr', null,
    td(link(topicHref(o.topic, o.partition, o.committed_offset), o.topic)), num(o.partition), num(o.committed_offset), num(o.log_end_offset), num(o.lag)))));
}

function facts(pairs) {
  return h('dl', { class: 'facts' }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== '')
    .flatMap(([k, v]) => [h('dt', { text: k }), h('dd', null, v)]));
}

function members(g) {
  if (g.members.length === 0) return h('p', { class: 'muted', text: 'No members.' });
  return table(['Member', 'Client', 'Host', 'Epoch', 'Assignment'], g.members.map((m) => h('tr', null,
    td(h('span', { class: 'mono', text: m.member_id })), td(m.client_id), td(m.client_host), num(m.member_epoch),
    td(m.assignment.map((a) => a.topic + ': ' + a.partitions.join(', ')).join('; ') || '—'))));
}

function renderShare(out) {
  out.append(h('h1', { text: 'Share group ' + route.group }));
  const d = viewOf(out, route.watch[0], 'share group ' + route.group);
  if (!d) return;
  if (d.group) {
    out.append(facts([['State', d.group.state], ['Group epoch', d.group.group_epoch], ['Assignment epoch', d.group.assignment_epoch], ['Assignor', d.group.assignor]]));
    out.append(h('h2', { text: 'Members' }), members(d.group));
  } else {
    out.append(h('p', { class: 'muted', text: 'The group is gone; its share-partition state is left.' }));
  }
  if (d.partitions.length === 0) out.append(h('p', { class: 'muted', text: 'No share partitions yet: nothing has been fetched.' }));
  for (const p of d.partitions) out.append(sharePartition(d, p));
}

function sharePartition(d, p) {
  const sec = h('section', { class: 'share-partition', 'data-partition': p.topic + '-' + p.partition });
  sec.append(h('h2', null, link(topicHref(p.topic, p.partition), p.topic + '-' + p.partition)));
  sec.append(facts([['Leader', p.leader], ['SPSO', p.spso], ['SPEO', p.speo], ['In flight', p.in_flight_records],
    ['Lag', p.lag], ['Next fetch offset', p.next_fetch_offset]]));
  const ranges = p.ranges || [];
  const span = ranges.reduce((n, r) => n + r.last_offset - r.first_offset + 1, 0);
  const counts = {};
  for (const r of ranges) counts[r.state] = (counts[r.state] || 0) + r.last_offset - r.first_offset + 1;
  const canvas = h('canvas', { class: 'window', width: 900, height: 18, 'aria-hidden': 'true' });
  canvas.__ranges = ranges;
  sec.append(h('h3', { text: 'In-flight window' }), canvas,
    h('p', { class: 'legend' }, Object.keys(counts).length === 0 ? 'empty' :
      Object.entries(counts).map(([s, n]) => h('span', null, stateBadge(s), ' ' + n))));
  if (span > 0 && span <= RECORD_ROWS) {
    const rows = [];
    for (const r of ranges) for (let o = r.first_offset; o <= r.last_offset; o++) rows.push(windowRow(d, p, r, o, o));
    sec.append(table(['Offset', 'State', 'Owner', 'Deliveries', 'Lock expires in'], rows));
  } else if (span > 0) {
    const rows = ranges.slice(0, RANGE_ROWS).map((r) => windowRow(d, p, r, r.first_offset, r.last_offset));
    sec.append(table(['Offsets', 'State', 'Owner', 'Deliveries', 'Lock expires in'], rows,
      ranges.length > RANGE_ROWS ? `the first ${RANGE_ROWS} of ${ranges.length} ranges (the strip above shows all)` : `${ranges.length} ranges`));
  }
  if (p.archived && p.archived.length > 0) {
    sec.append(h('h3', { text: 'Archived' }), table(['Offsets', 'Reason', 'Time'], p.archived.map((a) => h('tr', null,
      td(a.first_offset === a.last_offset ? String(a.first_offset) : a.first_offset + '–' + a.last_offset), td(a.reason), td(h('span', { class: 'mono', text: a.time }))))));
  }
  if (p.dead_letters && p.dead_letters.length > 0) {
    sec.append(h('h3', { text: 'Dead letters' }), table(['Offset', 'Copy'], p.dead_letters.map((x) => h('tr', null,
      td(link(storyHref(route.group, p.topic, p.partition, x.offset), String(x.offset))),
      td(link(topicHref(x.dlq_topic, x.dlq_partition, x.dlq_offset), `${x.dlq_topic}-${x.dlq_partition} at ${x.dlq_offset}`))))));
  }
  return sec;
}

function windowRow(d, p, r, first, last) {
  const offsets = first === last ? link(storyHref(route.group, p.topic, p.partition, first), String(first))
    : h('span', null, link(storyHref(route.group, p.topic, p.partition, first), String(first)), '–' + last);
  return h('tr', { class: 'record', 'data-offset': first, 'data-state': r.state },
    td(offsets), td(stateBadge(r.state)), td(h('span', { class: 'mono', text: r.owner || '' })), num(r.delivery_count), countdownCell(r.lock_deadline));
}

function countdownCell(deadline) {
  if (!deadline) return td('');
  return td(h('span', { class: 'countdown', 'data-deadline': Date.parse(deadline), title: 'lock deadline ' + deadline }));
}

const STRIP = { AVAILABLE: '#7fb8ef', ACQUIRED: '#f0b429', ACKNOWLEDGED: '#55b866', ARCHIVED: '#9e9e9e' };
function drawStrips() {
  for (const c of document.querySelectorAll('canvas.window')) {
    const ranges = c.__ranges || [];
    const ctx = c.getContext('2d');
    ctx.clearRect(0, 0, c.width, c.height);
    if (ranges.length === 0) continue;
    const lo = ranges[0].first_offset, hi = ranges[ranges.length - 1].last_offset + 1;
    const scale = c.width / Math.max(1, hi - lo);
    for (const r of ranges) {
      ctx.fillStyle = STRIP[r.state] || '#000';
      ctx.fillRect(Math.floor((r.first_offset - lo) * scale), 0, Math.max(1, Math.ceil((r.last_offset + 1 - r.first_offset) * scale)), c.height);
    }
  }
}

function updateCountdowns() {
  const now = brokerNowMs === null ? Date.now() : brokerNowMs;
  for (const el of document.querySelectorAll('.countdown')) {
    const left = +el.dataset.deadline - now;
    el.classList.toggle('expired', left <= 0);
    el.textContent = left > 0 ? (left / 1000).toFixed(1) + ' s' : 'due now';
  }
}

const EVENT_TEXT = {
  acquired: 'acquired', renewed: 'lock renewed', released: 'released', lock_expired: 'lock expired',
  session_closed: 'session closed', leader_moved: 'leader moved', acknowledged: 'acknowledged',
  archived: 'archived', dead_lettered: 'written to the dead-letter queue',
};

function renderStory(out) {
  const r = route;
  out.append(h('h1', { text: `Record ${r.topic}-${r.partition} at ${r.offset}` }),
    h('p', null, 'Share group ', link('#/share-groups/' + enc(r.group), r.group), ' · ', link(topicHref(r.topic, r.partition, r.offset), 'the record in the log')));
  const v = views[r.watch[0]];
  if (v && v.streamError && (v.status === 400 || v.status === 404)) {
    out.append(h('p', { class: 'note', text: 'This broker does not serve record stories at ' + r.watch[0] + ' (' + (v.body && v.body.error) + ').' }));
    return;
  }
  const s = viewOf(out, r.watch[0], 'the record story');
  if (!s) return;
  if (s.record) {
    out.append(h('h2', { text: 'Now' }), table(['State', 'Owner', 'Deliveries', 'Lock expires in'], [h('tr', null,
      td(stateBadge(s.record.state)), td(h('span', { class: 'mono', text: s.record.owner || '' })), num(s.record.delivery_count), countdownCell(s.record.lock_deadline))]));
  } else {
    out.append(h('p', { class: 'muted', text: 'The record is not in the in-flight window now.' }));
  }
  out.append(h('h2', { text: 'Story' }));
  if (s.truncated) out.append(h('p', { class: 'note', text: 'Older events were dropped from the bounded ring; the first ones shown are not the first that happened.' }));
  if (s.events.length === 0) { out.append(h('p', { class: 'muted', text: 'No events kept for this offset.' })); return; }
  out.append(h('ol', { class: 'story' }, s.events.map((e) => h('li', { 'data-event': e.event },
    h('span', { class: 'mono', text: e.time }), ' ', h('strong', { text: EVENT_TEXT[e.event] || e.event }),
    e.member ? ' by ' + e.member : '', e.delivery_count ? ' (delivery ' + e.delivery_count + ')' : '',
    e.type ? ' as ' + e.type : '', e.reason ? ' (' + e.reason + ')' : '',
    e.lock_deadline ? ' lock until ' + e.lock_deadline : '',
    e.dlq_topic ? h('span', null, ' → ', link(topicHref(e.dlq_topic, e.dlq_partition, e.dlq_offset), `${e.dlq_topic}-${e.dlq_partition} at ${e.dlq_offset}`)) : ''))));
}

// ---- actions (the test API) ----

function renderActions() {
  const box = $('actions');
  box.replaceChildren(h('h2', { text: 'Actions' }));
  if (testAPI === null) { box.append(h('p', { class: 'muted', text: 'Checking whether the test API is on…' })); return; }
  if (!testAPI) {
    box.append(h('p', { class: 'note' }, 'Read-only: this broker runs without the test API. Start it with ',
      h('code', { text: '--enable-test-api' }), ' (e.g. ', h('code', { text: 'sharebroker serve --http 127.0.0.1:9644 --enable-test-api' }),
      ') to advance the clock, inject faults, move leaders and coordinators, stop and start nodes and produce records from here.'));
    return;
  }
  const result = h('p', { id: 'action-result', role: 'status', 'aria-live': 'polite' });
  const act = async (label, method, path, body) => {
    const r = await send(method, path, body);
    result.textContent = label + ': ' + (r.status < 300 ? 'done ' : 'HTTP ' + r.status + ' ') + JSON.stringify(r.body);
  };
  const field = (name, label, value, size) => h('label', null, label, h('input', { name, value: value === undefined ? '' : value, size: size || 8 }));
  const form = (legend, fields, submit, onsubmit) => h('form', { 'aria-label': legend, onsubmit: (ev) => {
    ev.preventDefault();
    onsubmit(Object.fromEntries(new FormData(ev.target)));
  } }, h('fieldset', null, h('legend', { text: legend }), fields, h('button', { type: 'submit', text: submit })));
  const topic = route.topic || '';
  box.append(
    form('Clock', [field('duration', 'advance by', '31s')], 'Advance clock',
      (f) => act('advance clock', 'POST', '/v1/test/clock/advance', { duration: f.duration })),
    form('Produce a record', [field('topic', 'topic', topic, 14), field('partition', 'partition', route.params.get('partition') || '0', 3),
      field('key', 'key', ''), field('value', 'value', '', 20)], 'Produce',
    (f) => act('produce', 'POST', '/v1/test/produce', { topic: f.topic, partition: +f.partition, key: f.key === '' ? null : f.key, value: f.value })),
    form('Move a leader', [field('topic', 'topic', topic, 14), field('partition', 'partition', '0', 3), field('node', 'to node', '1', 3)], 'Move leader',
      (f) => act('move leader', 'POST', '/v1/test/leaders', { topic: f.topic, partition: +f.partition, node: +f.node })),
    form('Move a group coordinator', [field('group', 'group', route.group || '', 14), field('node', 'to node', '1', 3)], 'Move coordinator',
      (f) => act('move coordinator', 'POST', '/v1/test/coordinators', { group: f.group, node: +f.node })),
    form('Stop a node', [field('node', 'node', '1', 3)], 'Stop node',
      (f) => act('stop node', 'POST', '/v1/test/nodes/' + enc(f.node) + '/stop')),
    form('Start a node', [field('node', 'node', '1', 3)], 'Start node',
      (f) => act('start node', 'POST', '/v1/test/nodes/' + enc(f.node) + '/start')),
    form('Inject a fault', [field('api_key', 'API key', '78', 3), field('error_code', 'error code', '6', 3), field('count', 'count', '1', 3),
      field('topic', 'topic', topic, 12), field('group', 'group', route.group || '', 12)], 'Arm fault',
    (f) => act('arm fault', 'POST', '/v1/test/faults', Object.assign({ api_key: +f.api_key, error_code: +f.error_code, count: +f.count },
      f.topic ? { topic: f.topic } : {}, f.group ? { group: f.group } : {}))),
    h('p', null, h('button', { type: 'button', onclick: () => act('clear faults', 'DELETE', '/v1/test/faults') }, 'Clear faults')),
    result);
}

async function probeTestAPI() {
  try {
    const r = await getJSON('/v1/test/clock');
    if (r.status === 401) {
      testAPI = null;
      $('actions').replaceChildren(h('h2', { text: 'Actions' }),
        h('p', { class: 'note', text: 'The broker wants a bearer token: enter it above, or open the console with #token=…' }));
      return;
    }
    testAPI = r.status === 200;
    if (r.status === 200 && brokerNowMs === null) brokerNowMs = Date.parse(r.body.now);
  } catch (_) {
    testAPI = false;
  }
  renderActions();
}

// ---- start ----

$('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  token = $('token').value;
  sessionStorage.setItem(TOKEN_KEY, token);
  $('token').value = '';
  say(token ? 'token set' : 'token cleared');
  route = null;
  navigate();
  probeTestAPI();
});
// The skip link moves the focus without touching the address, which
// holds the route.
document.querySelector('.skip').addEventListener('click', (ev) => {
  ev.preventDefault();
  $('main').focus();
});
window.addEventListener('hashchange', navigate);
navigate();
probeTestAPI();
