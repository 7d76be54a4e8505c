// Herald console: a client of Herald's HTTP API (docs/http-api.md), served by `herald serve`.
// No outside assets, no framework. The token lives in sessionStorage and is only ever sent as an
// Authorization header (never in a URL, never logged). The event stream is read with fetch and a
// ReadableStream, because EventSource cannot set headers.
"use strict";

const TOKEN_KEY = "herald.console.token";
const OUTCOMES = ["delivered", "retry", "dead", "failed", "suppressed"];
const CHART = ["delivered", "retry", "dead"];
const COLORS = { delivered: "#1a7f37", retry: "#9a6700", dead: "#cf222e", failed: "#8250df", suppressed: "#57606a" };
const SVGNS = "http://www.w3.org/2000/svg";

const state = {
  token: null,
  summary: null,
  namespace: "default",
  view: "overview",
  notifications: new Map(), // id -> history record
  stream: null, // AbortController of the event stream
  lastEventId: null,
  refreshTimer: null,
  pending: new Map(), // ids to re-fetch at the next batch
  detailId: null,
};

// ---- DOM helpers (text only: nothing from the server is parsed as HTML) ----

function $(id) { return document.getElementById(id); }

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") el.textContent = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") el.textContent = v; else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) if (c) el.append(c);
  return el;
}

function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }

function show(el, on) { el.hidden = !on; }

function fmtTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (isNaN(d)) return iso;
  return d.toLocaleString(undefined, { hour12: false });
}

function pill(outcome, count) {
  const text = count === undefined ? outcome : `${count} ${outcome}`;
  return h("span", { class: `pill o-${outcome}` }, text);
}

// ---- API ----

class APIError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function api(method, path, body) {
  const headers = { Authorization: "Bearer " + state.token, Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, body, cache: "no-store", credentials: "omit" });
  if (res.status === 204) return null;
  let json = null;
  try { json = await res.json(); } catch (_) { json = null; }
  if (!res.ok) {
    const msg = json && json.error && json.error.message ? json.error.message : res.statusText;
    throw new APIError(res.status, msg);
  }
  return json;
}

function explainStatus(err) {
  if (!(err instanceof APIError)) return "The server cannot be reached: " + err.message;
  if (err.status === 401) return "The server does not accept this token (401). Check that you pasted it whole.";
  if (err.status === 403) return "This token does not have the read scope (403). Create one with: herald tokens new --name NAME --scopes read";
  return `Request failed (${err.status}): ${err.message}`;
}

function showError(msg) {
  const el = $("app-error");
  el.textContent = msg || "";
  show(el, !!msg);
}

// ---- sign-in ----

async function signIn(token) {
  state.token = token;
  try {
    const summary = await api("GET", "/v1/summary");
    sessionStorage.setItem(TOKEN_KEY, token);
    $("token").value = "";
    show($("signin-error"), false);
    startApp(summary);
  } catch (err) {
    state.token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    const el = $("signin-error");
    el.textContent = explainStatus(err);
    show(el, true);
    show($("signin"), true);
    show($("app"), false);
  }
}

function signOut() {
  stopStream();
  clearInterval(state.refreshTimer);
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = null;
  state.summary = null;
  state.notifications.clear();
  show($("app"), false);
  show($("who"), false);
  show($("signin"), true);
  history.replaceState(null, "", "#");
  $("token").focus();
}

function startApp(summary) {
  show($("signin"), false);
  show($("app"), true);
  applySummary(summary);
  const tok = summary.token || {};
  const who = $("who");
  who.textContent = `Signed in as ${tok.name || "a token"} (${(tok.scopes || []).join(", ")})`;
  show(who, true);
  const select = clear($("namespace"));
  const names = summary.namespaces && summary.namespaces.length ? summary.namespaces : ["default"];
  for (const n of names) select.append(h("option", { value: n }, n));
  state.namespace = names.includes(state.namespace) ? state.namespace : names[0];
  select.value = state.namespace;
  clearInterval(state.refreshTimer);
  state.refreshTimer = setInterval(refreshSummary, 10000);
  startStream();
  route();
}

async function refreshSummary() {
  if (!state.token) return;
  try {
    applySummary(await api("GET", "/v1/summary"));
    showError(null);
  } catch (err) {
    showError(explainStatus(err));
  }
}

// ---- overview ----

function applySummary(summary) {
  state.summary = summary;
  const outbox = summary.outbox || {};
  $("outbox-pending").textContent = outbox.pending ?? 0;
  $("outbox-retry").textContent = outbox.retry ?? 0;
  let delivered = 0, dead = 0;
  const body = clear($("channels").tBodies[0]);
  for (const c of summary.channels || []) {
    const n = c.lastHour || {};
    delivered += n.delivered || 0;
    dead += n.dead || 0;
    body.append(h("tr", { "data-channel": c.name },
      h("td", { "data-label": "Channel" }, h("strong", {}, c.name), c.enabled === false ? " (disabled)" : ""),
      h("td", { "data-label": "Type" }, c.type),
      OUTCOMES.map((o) => h("td", { class: `num t-${o}`, "data-label": o[0].toUpperCase() + o.slice(1) }, String(n[o] || 0)))));
  }
  $("hour-delivered").textContent = delivered;
  $("hour-dead").textContent = dead;
  drawChart(summary.perMinute || []);
  $("summary-note").textContent = `Updated ${fmtTime(summary.generatedAt)}` +
    (summary.truncated ? " · counts cover only the most recent events of the hour" : "");
  if (state.view === "routes") renderGraphs();
}

function drawChart(minutes) {
  const box = clear($("chart"));
  const W = 600, H = 170, left = 30, bottom = 20, top = 8;
  const n = Math.max(minutes.length, 1);
  const max = Math.max(1, ...minutes.map((m) => CHART.reduce((a, k) => a + (m[k] || 0), 0)));
  const bw = (W - left - 4) / n;
  const y = (v) => top + (H - top - bottom) * (1 - v / max);
  const totals = CHART.map((k) => minutes.reduce((a, m) => a + (m[k] || 0), 0));
  const svg = s("svg", {
    viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": `Deliveries per minute over the last hour: ${CHART.map((k, i) => `${totals[i]} ${k}`).join(", ")}`,
  });
  svg.append(s("line", { class: "axis", x1: left, y1: y(0), x2: W, y2: y(0), stroke: "#d0d7de" }));
  svg.append(s("line", { class: "axis", x1: left, y1: top, x2: left, y2: y(0), stroke: "#d0d7de" }));
  svg.append(s("text", { x: left - 4, y: top + 8, "text-anchor": "end", text: String(max) }));
  svg.append(s("text", { x: left - 4, y: y(0), "text-anchor": "end", text: "0" }));
  svg.append(s("text", { x: left, y: H - 4, text: "−60 min" }));
  svg.append(s("text", { x: W - 2, y: H - 4, "text-anchor": "end", text: "now" }));
  minutes.forEach((m, i) => {
    let base = 0;
    for (const k of CHART) {
      const v = m[k] || 0;
      if (!v) continue;
      const rect = s("rect", {
        x: left + 2 + i * bw, y: y(base + v), width: Math.max(bw - 1, 1), height: y(base) - y(base + v), fill: COLORS[k],
      });
      rect.append(s("title", { text: `${fmtTime(m.at)}: ${v} ${k}` }));
      svg.append(rect);
      base += v;
    }
  });
  box.append(svg);
  box.append(h("div", { class: "legend" }, CHART.map((k, i) =>
    h("span", {}, h("span", { class: `swatch o-${k}` }), `${k} (${totals[i]})`))));
}

// ---- notifications ----

function outcomeCounts(record) {
  const counts = {};
  for (const d of record.deliveries || []) counts[d.outcome] = (counts[d.outcome] || 0) + 1;
  return counts;
}

function renderNotifications() {
  const list = [...state.notifications.values()]
    .filter((n) => n.namespace === state.namespace)
    .sort((a, b) => (b.createdAt || "").localeCompare(a.createdAt || "") || (b.id < a.id ? -1 : 1));
  const body = clear($("notifications").tBodies[0]);
  for (const n of list.slice(0, 200)) {
    const counts = outcomeCounts(n);
    const outcomes = Object.keys(counts).length
      ? OUTCOMES.filter((o) => counts[o]).map((o) => pill(o, counts[o]))
      : h("span", { class: "note" }, "no deliveries");
    body.append(h("tr", { "data-id": n.id },
      h("td", { "data-label": "Time" }, h("time", { datetime: n.createdAt }, fmtTime(n.createdAt))),
      h("td", { "data-label": "Title" }, n.title || h("span", { class: "note" }, "(no title)")),
      h("td", { "data-label": "Type" }, n.type),
      h("td", { "data-label": "Outcomes", class: "outcomes" }, outcomes),
      h("td", {}, h("button", { type: "button", class: "secondary", onclick: () => { location.hash = "#notification/" + encodeURIComponent(n.id); } },
        "Details", h("span", { class: "visually-hidden" }, ` of ${n.title || n.id}`)))));
  }
  show($("notifications-empty"), list.length === 0);
}

async function loadNotifications() {
  try {
    const res = await api("GET", `/v1/notifications?namespace=${encodeURIComponent(state.namespace)}&limit=50`);
    for (const n of res.notifications || []) state.notifications.set(n.id, n);
    renderNotifications();
  } catch (err) {
    showError(explainStatus(err));
  }
}

// Ids named by stream events are fetched in batches every 300 ms: a few one by one, a burst as one
// list read, so a busy server never sees more than a few console requests per second.
let fetchTimer = null;
function scheduleFetch(id) {
  state.pending.set(id, true);
  if (fetchTimer) return;
  fetchTimer = setTimeout(async () => {
    fetchTimer = null;
    const ids = [...state.pending.keys()];
    state.pending.clear();
    if (ids.length > 5) {
      await loadNotifications();
      if (state.view === "detail" && ids.includes(state.detailId)) ids.splice(0, ids.length, state.detailId);
      else return;
    }
    for (const id of ids) {
      try {
        const n = await api("GET", "/v1/notifications/" + encodeURIComponent(id));
        state.notifications.set(n.id, n);
        if (state.view === "detail" && state.detailId === n.id) renderDetail(n);
      } catch (_) { /* purged meanwhile, or another namespace: nothing to show */ }
    }
    renderNotifications();
  }, 300);
}

let summaryTimer = null;
function scheduleSummary() {
  if (summaryTimer) return;
  summaryTimer = setTimeout(() => { summaryTimer = null; refreshSummary(); }, 1000);
}

// ---- the event stream: fetch + ReadableStream, Authorization header, Last-Event-ID on reconnect ----

function stopStream() {
  if (state.stream) state.stream.abort();
  state.stream = null;
}

function setLive(text, on) {
  const el = $("live");
  el.textContent = text;
  el.className = "live " + (on ? "on" : "off");
}

function startStream() {
  stopStream();
  const controller = new AbortController();
  state.stream = controller;
  state.lastEventId = null;
  const namespace = state.namespace;
  (async () => {
    let delay = 1000;
    while (!controller.signal.aborted) {
      try {
        const headers = { Authorization: "Bearer " + state.token, Accept: "text/event-stream" };
        if (state.lastEventId) headers["Last-Event-ID"] = state.lastEventId;
        const res = await fetch(`/v1/events?namespace=${encodeURIComponent(namespace)}`,
          { headers, signal: controller.signal, cache: "no-store", credentials: "omit" });
        if (!res.ok || !res.body) throw new APIError(res.status, res.statusText);
        setLive("live", true);
        delay = 1000;
        await readEvents(res.body, controller.signal);
      } catch (err) {
        if (controller.signal.aborted) return;
        if (err instanceof APIError && (err.status === 401 || err.status === 403)) {
          setLive("not live: " + explainStatus(err), false);
          return;
        }
      }
      if (controller.signal.aborted) return;
      setLive("reconnecting…", false);
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 15000);
    }
  })();
}

async function readEvents(body, signal) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  signal.addEventListener("abort", () => reader.cancel().catch(() => {}));
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      dispatchEvent(block);
    }
  }
}

function dispatchEvent(block) {
  let id = null, event = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const i = line.indexOf(":");
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? "" : line.slice(i + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "id") id = value;
    else if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  if (id) state.lastEventId = id;
  if (!data.length) return;
  let payload;
  try { payload = JSON.parse(data.join("\n")); } catch (_) { return; }
  const nid = payload.notificationId;
  if (nid) scheduleFetch(nid);
  if (event === "delivery" || event === "notification") scheduleSummary();
}

// ---- detail ----

async function openDetail(id) {
  state.detailId = id;
  const cached = state.notifications.get(id);
  if (cached) renderDetail(cached);
  try {
    const n = await api("GET", "/v1/notifications/" + encodeURIComponent(id));
    state.notifications.set(n.id, n);
    if (state.detailId === id) renderDetail(n);
  } catch (err) {
    showError(err instanceof APIError && err.status === 404 ? `No notification ${id} in your namespaces.` : explainStatus(err));
  }
}

function renderDetail(n) {
  $("h-detail").textContent = n.title ? `Notification: ${n.title}` : "Notification";
  const head = clear($("detail-head"));
  const facts = [["Id", n.id], ["Namespace", n.namespace], ["Type", n.type], ["Accepted", fmtTime(n.createdAt)]];
  for (const [k, v] of facts) head.append(h("dt", {}, k), h("dd", { class: k === "Id" ? "mono" : undefined }, v || "–"));
  const body = clear($("deliveries").tBodies[0]);
  for (const d of n.deliveries || []) {
    const suppressedBy = d.outcome === "suppressed" ? `step ${(d.step ?? 0) + 1} rule: ${d.reason || "suppressed"}` : "";
    const parts = d.outcome === "suppressed" ? [] : [d.status, d.reason];
    if (d.nextAttemptAt) parts.push(`(next attempt ${fmtTime(d.nextAttemptAt)})`);
    const reason = parts.filter((x) => x !== undefined && x !== null).join(" ");
    body.append(h("tr", { "data-delivery": d.id },
      h("td", { "data-label": "Step", class: "num" }, String((d.step ?? 0) + 1)),
      h("td", { "data-label": "Channel" }, d.channel),
      h("td", { "data-label": "Device" }, d.deviceId ? `${d.deviceId}${d.platform ? " (" + d.platform + ")" : ""}` : "– (sink)"),
      h("td", { "data-label": "Outcome", class: "outcome" }, pill(d.outcome)),
      h("td", { "data-label": "Attempts", class: "num" }, String(d.attempt ?? 0)),
      h("td", { "data-label": "Provider reason" }, reason),
      h("td", { "data-label": "Suppressed by", class: "suppressed-by" }, suppressedBy)));
  }
  if (!(n.deliveries || []).length) body.append(h("tr", {}, h("td", { colspan: 7 }, "No deliveries were planned.")));
  const tl = clear($("timeline"));
  tl.append(h("li", {}, h("time", { datetime: n.createdAt }, fmtTime(n.createdAt)), "accepted"));
  for (const e of n.events || []) {
    const extra = [e.actionId ? `action ${e.actionId}` : "", e.deviceId ? `on ${e.deviceId}` : ""].filter(Boolean).join(" ");
    tl.append(h("li", { "data-kind": e.kind }, h("time", { datetime: e.at }, fmtTime(e.at)), h("strong", {}, e.kind), extra ? " " + extra : ""));
  }
  if (!(n.events || []).length) tl.append(h("li", { class: "note" }, "No received, tapped, dismissed or action events yet."));
}

// ---- routes: the graph of `herald graph`, drawn as SVG ----

function renderGraphs() {
  const box = clear($("graphs"));
  const graph = (state.summary && state.summary.graph) || { channels: [], routes: [] };
  const types = new Map(graph.channels.map((c) => [c.name, c]));
  for (const r of graph.routes) {
    const fig = h("figure", { class: "graph", "data-route": r.name });
    fig.append(h("h3", {}, r.name === "default" ? "default route" : `route ${r.name}`));
    fig.append(drawRoute(r, types));
    box.append(fig);
  }
  if (!graph.routes.length) box.append(h("p", { class: "note" }, "No routes configured."));
}

function drawRoute(route, types) {
  // One row per step: the step's rule box on the left, its channels on the right, steps linked top to bottom.
  const W = 560, stepW = 250, chanX = 330, chanW = 220, rowGap = 16, lineH = 14;
  const rows = route.steps.map((st) => {
    const lines = st.label.length;
    const h1 = Math.max(lines * lineH + 14, st.deliver.length * 30 + 4);
    return { st, height: h1 };
  });
  const headH = 36;
  const total = headH + rows.reduce((a, r) => a + r.height + rowGap, 0) + 4;
  const svg = s("svg", { viewBox: `0 0 ${W} ${total}`, role: "img",
    "aria-label": `Route ${route.name}: ` + route.steps.map((st, i) => `step ${i + 1} delivers to ${st.deliver.join(", ")}`).join("; ") });
  svg.append(s("ellipse", { cx: stepW / 2, cy: 16, rx: 80, ry: 14, fill: "#ffffff", stroke: "#0969da" }));
  svg.append(s("text", { x: stepW / 2, y: 20, "text-anchor": "middle", text: route.name }));
  let y = headH, prevBottom = 30;
  rows.forEach(({ st, height }, i) => {
    svg.append(s("line", { x1: stepW / 2, y1: prevBottom, x2: stepW / 2, y2: y, stroke: "#57606a" }));
    const g = s("g", { class: "step", "data-step": i + 1 });
    g.append(s("rect", { x: 1, y, width: stepW, height, rx: 8, fill: "#ffffff", stroke: "#57606a" }));
    st.label.forEach((t, j) => g.append(s("text", { x: 10, y: y + 16 + j * lineH, text: t, "font-weight": j === 0 ? 600 : 400 })));
    st.deliver.forEach((c, j) => {
      const cy = y + 4 + j * 30;
      const ch = types.get(c) || { type: "?", enabled: true };
      g.append(s("line", { x1: stepW + 1, y1: y + height / 2, x2: chanX, y2: cy + 13, stroke: "#57606a" }));
      g.append(s("rect", { x: chanX, y: cy, width: chanW, height: 26, rx: 4, fill: ch.enabled === false ? "#f6f8fa" : "#ddf4ff",
        stroke: "#0969da", "stroke-dasharray": ch.enabled === false ? "4 3" : "none" }));
      g.append(s("text", { x: chanX + 8, y: cy + 17, text: `${c} (${ch.type})` }));
    });
    svg.append(g);
    prevBottom = y + height;
    y += height + rowGap;
  });
  return svg;
}

async function explain(ev) {
  ev.preventDefault();
  const out = clear($("plan"));
  const err = $("explain-error");
  show(err, false);
  let text = $("explain-input").value;
  try { JSON.parse(text); } catch (e) { err.textContent = "Not JSON: " + e.message; show(err, true); return; }
  try {
    const plan = await api("POST", "/v1/explain", text);
    renderPlan(out, plan);
  } catch (e) {
    err.textContent = e instanceof APIError && e.status === 422 ? "Not a valid notification: " + e.message : explainStatus(e);
    show(err, true);
  }
}

function renderPlan(out, plan) {
  out.append(h("p", {}, `Route `, h("strong", {}, plan.route), ` for ${plan.namespace}/${plan.type}` + (plan.severity ? ` (${plan.severity})` : "")));
  for (const st of plan.steps || []) {
    const box = h("div", { class: "step", "data-step": st.index + 1 });
    let head = `Step ${st.index + 1} · mode ${st.mode}`;
    if (st.unlessDelivered) head += ` · unless delivered: ${Array.isArray(st.unlessDelivered) ? st.unlessDelivered.join(", ") : st.unlessDelivered}`;
    box.append(h("h4", {}, head));
    if (!st.applies) box.append(h("p", { class: "note" }, `Not applicable: ${st.notApplicable || "when"}`));
    if (st.suppressed) box.append(h("p", { class: "t-suppressed" }, `Suppressed: ${st.suppressed}`));
    const ul = h("ul");
    for (const c of st.channels || []) {
      let what;
      if (!c.enabled) what = "disabled";
      else if (c.sink) what = "sink (one delivery)";
      else if (!c.devices.length) what = "no devices";
      else what = c.devices.map((d) => `${d.deviceId} (${d.platform})`).join(", ");
      ul.append(h("li", { "data-channel": c.name }, h("strong", {}, c.name), ` [${c.type}]: ${what}`));
    }
    box.append(ul);
    out.append(box);
  }
  if (!(plan.steps || []).length) out.append(h("p", { class: "note" }, "The route has no steps."));
  for (const d of plan.unreachableDevices || []) out.append(h("p", { class: "t-dead" }, `Unreachable: ${d.deviceId} (${d.platform}): ${d.reason}`));
}

// ---- devices ----

async function loadDevices() {
  const body = clear($("devices").tBodies[0]);
  const canRemove = ((state.summary && state.summary.token && state.summary.token.scopes) || []).includes("devices");
  $("devices-note").textContent = canRemove
    ? "Removing a device needs a confirmation. Secrets are never shown."
    : "Secrets are never shown. Removing devices needs a token with the devices scope.";
  let res;
  try {
    res = await api("GET", `/v1/devices?namespace=${encodeURIComponent(state.namespace)}`);
  } catch (err) { showError(explainStatus(err)); return; }
  const last = ((state.summary && state.summary.lastOutcomes) || {})[state.namespace] || {};
  // Devices holding a local-push stream to this server now (issue 35).
  const live = new Set((((state.summary && state.summary.connected) || {})[state.namespace] || []).map((c) => c.deviceId));
  const devices = res.devices || [];
  for (const d of devices) {
    const lo = last[d.deviceId];
    const row = h("tr", { "data-device": d.deviceId },
      h("td", { "data-label": "Device" }, h("strong", {}, d.deviceId), live.has(d.deviceId) ? h("div", { class: "t-delivered" }, "connected (local push)") : null, d.unreachable ? h("div", { class: "t-dead" }, "unreachable: " + d.unreachable) : null),
      h("td", { "data-label": "Platform" }, d.platform),
      h("td", { "data-label": "Channels" }, (d.channels || []).join(", ") || "–"),
      h("td", { "data-label": "Last outcome" }, lo ? [pill(lo.outcome), ` ${lo.channel} · ${fmtTime(lo.at)}`] : h("span", { class: "note" }, "none in the last hour")));
    const actions = h("td", {});
    if (canRemove) actions.append(removeButton(d, actions));
    row.append(actions);
    body.append(row);
  }
  show($("devices-empty"), devices.length === 0);
}

function removeButton(d, cell) {
  return h("button", { type: "button", class: "danger", onclick: () => {
    clear(cell);
    const yes = h("button", { type: "button", class: "danger confirm", onclick: async () => {
      try {
        await api("DELETE", `/v1/devices?namespace=${encodeURIComponent(state.namespace)}&deviceId=${encodeURIComponent(d.deviceId)}&platform=${encodeURIComponent(d.platform)}`);
        loadDevices();
      } catch (err) {
        showError(err instanceof APIError && err.status === 403 ? "Removing devices needs a token with the devices scope (403)." : explainStatus(err));
        loadDevices();
      }
    } }, `Remove ${d.deviceId}`);
    const no = h("button", { type: "button", class: "secondary", onclick: () => { clear(cell); cell.append(removeButton(d, cell)); } }, "Cancel");
    cell.append(h("span", { class: "note" }, "Really remove? "), yes, " ", no);
    no.focus();
  } }, "Remove", h("span", { class: "visually-hidden" }, ` ${d.deviceId}`));
}

// ---- navigation (hash routes carry no secrets) ----

function route() {
  if (!state.token) return;
  const hash = decodeURIComponent(location.hash.slice(1));
  let view = hash || "overview";
  let id = null;
  if (view.startsWith("notification/")) { id = view.slice("notification/".length); view = "detail"; }
  if (!["overview", "notifications", "detail", "routes", "devices", "relays"].includes(view)) view = "overview";
  state.view = view;
  for (const v of ["overview", "notifications", "detail", "routes", "devices", "relays"]) show($("view-" + v), v === view);
  for (const b of document.querySelectorAll(".tabs button[data-view]")) {
    const current = b.dataset.view === view || (view === "detail" && b.dataset.view === "notifications");
    if (current) b.setAttribute("aria-current", "page"); else b.removeAttribute("aria-current");
  }
  if (view === "overview") refreshSummary();
  if (view === "notifications") { renderNotifications(); loadNotifications(); }
  if (view === "detail") openDetail(id);
  if (view === "routes") renderGraphs();
  if (view === "devices") loadDevices();
  if (view === "relays") loadRelays(); // relays.js
}

function init() {
  $("signin-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const t = $("token").value.trim();
    if (t) signIn(t);
  });
  $("signout").addEventListener("click", signOut);
  $("back").addEventListener("click", () => { location.hash = "#notifications"; });
  $("explain-form").addEventListener("submit", explain);
  $("namespace").addEventListener("change", (ev) => {
    state.namespace = ev.target.value;
    startStream();
    route();
  });
  for (const b of document.querySelectorAll(".tabs button[data-view]")) {
    b.addEventListener("click", () => { location.hash = "#" + b.dataset.view; });
  }
  window.addEventListener("hashchange", route);
  const saved = sessionStorage.getItem(TOKEN_KEY);
  if (saved) signIn(saved); else $("token").focus();
}

document.addEventListener("DOMContentLoaded", init);
