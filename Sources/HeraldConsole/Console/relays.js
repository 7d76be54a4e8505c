"use strict";
// Herald console: the relay traffic section (docs/console.md, "Relay traffic"). Reads GET /v1/relays
// (a token with read covering every namespace) and shows, per relay protocol, the requests kept in the
// store counted by status code, their pushes by outcome, and the newest requests. The history holds
// no content: time, route template, status, pushes, caller (a token name or a hashed address).
// Uses the helpers of console.js ($, h, clear, show, pill, fmtTime, api, explainStatus).

async function loadRelays() {
  const out = clear($("relays"));
  show($("relays-note"), false);
  let res;
  try {
    res = await api("GET", "/v1/relays");
  } catch (err) {
    const el = $("relays-note");
    el.textContent = err instanceof APIError && err.status === 403
      ? "Relay traffic needs a token with read that covers every namespace (*)."
      : explainStatus(err);
    show(el, true);
    return;
  }
  if (!res.relays.length) {
    $("relays-note").textContent = "No relay is configured (server.relays) and none was called.";
    show($("relays-note"), true);
    return;
  }
  for (const r of res.relays) out.append(renderRelay(r));
  $("relays-note").textContent = `The store keeps the newest ${res.kept} relay requests of every herald serve on it.`;
  show($("relays-note"), true);
}

function renderRelay(r) {
  const codes = Object.entries(r.requests).sort(([a], [b]) => Number(a) - Number(b));
  const pushes = Object.entries(r.pushes).sort();
  const rows = r.recent.map((q) => h("tr", {},
    h("td", { "data-label": "Time" }, fmtTime(q.at)),
    h("td", { "data-label": "Route" }, h("code", {}, q.route)),
    h("td", { "data-label": "Status" }, String(q.status)),
    h("td", { "data-label": "Pushes" }, Object.entries(q.pushes).sort().map(([o, n]) => pill(o, n))),
    h("td", { "data-label": "Caller" }, q.caller)));
  return h("section", { class: "relay", "aria-label": `Relay ${r.protocol}` },
    h("h3", {}, r.protocol, " ", h("span", { class: "note" }, r.routes.join(", "))),
    h("p", {}, "Requests by status: ",
      codes.length ? codes.map(([c, n]) => h("span", { class: "pill" }, `${n} × ${c}`)) : "none",
      " · Pushes: ", pushes.length ? pushes.map(([o, n]) => pill(o, n)) : "none"),
    h("div", { class: "table-wrap" },
      h("table", { class: "cards-on-phone" },
        h("thead", {}, h("tr", {}, ["Time", "Route", "Status", "Pushes", "Caller"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, rows))));
}
