// Karman console: plain JavaScript over the JSON API (/api/v1/), no
// build step and nothing fetched from elsewhere. Everything shown is put
// in the page with textContent, never as HTML.
"use strict";

const API = "/api/v1";
const main = document.getElementById("main");
let timers = [];

// api calls the JSON API and returns the decoded answer, or throws an
// Error whose message is the API's.
async function api(method, path, body) {
  const init = { method, headers: {}, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(API + path, init);
  const data = await resp.json().catch(() => ({}));
  if (!resp.ok) {
    const e = new Error((data.error && data.error.message) || resp.statusText);
    e.code = data.error && data.error.code;
    throw e;
  }
  return data;
}

// el builds an element: attributes (on* are listeners), then children
// (strings become text).
function el(tag, attrs, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) n.addEventListener(k.slice(2), v);
    else if (k === "class") n.className = v;
    else n.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    n.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return n;
}

function toast(msg, bad) {
  const t = el("div", { class: bad ? "bad" : "" }, msg);
  document.getElementById("toast").append(t);
  setTimeout(() => t.remove(), bad ? 8000 : 4000);
}

const fmt = (n) => (n === undefined || n === null ? "-" : Number(n).toLocaleString());
const rate = (n) => (n === undefined ? "-" : n.toFixed(1));
const when = (ms) => (ms > 0 ? new Date(ms).toLocaleString() : "-");
function bytes(n) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return n.toFixed(i ? 1 : 0) + " " + u[i];
}
function every(ms, f) { f(); timers.push(setInterval(f, ms)); }
function cell(v, num) { return el("td", { class: num ? "num" : "" }, v); }
function table(headers, rows) {
  return el("table", {},
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", { class: h.endsWith("#") ? "num" : "" }, h.replace(/#$/, ""))))),
    el("tbody", {}, rows));
}
function errorBox(e) { return el("p", { class: "error" }, e.message); }

// Chart draws series of [time, value] on a canvas, keeping the last
// keepMs of them.
class Chart {
  constructor(title, names, keepMs, unit) {
    this.names = names; this.keep = keepMs; this.unit = unit || "";
    this.points = names.map(() => []);
    this.canvas = el("canvas", { width: 760, height: 320, "aria-label": title });
    this.node = el("div", {}, el("h2", {}, title), this.canvas);
  }
  add(t, values) {
    values.forEach((v, i) => this.points[i].push([t, v]));
    for (const p of this.points) while (p.length && p[0][0] < t - this.keep) p.shift();
    this.draw();
  }
  draw() {
    const c = this.canvas, g = c.getContext("2d"), W = c.width, H = c.height, pad = 40;
    g.clearRect(0, 0, W, H);
    const all = this.points.flat();
    c.dataset.points = all.length; // what the browser tests read
    if (!all.length) return;
    const t1 = all.reduce((m, p) => Math.max(m, p[0]), 0), t0 = t1 - this.keep;
    const vmax = Math.max(1, ...all.map((p) => p[1]));
    g.strokeStyle = "#e5e7eb"; g.fillStyle = "#6b7280"; g.font = "20px system-ui";
    for (let i = 0; i <= 4; i++) {
      const y = H - pad - (H - 2 * pad) * i / 4;
      g.beginPath(); g.moveTo(pad, y); g.lineTo(W - 10, y); g.stroke();
      const v = vmax * i / 4;
      g.fillText(this.unit === "bytes" ? bytes(v) : v.toFixed(v < 10 ? 1 : 0), 2, y - 2);
    }
    const colors = ["#2563eb", "#16a34a", "#d97706", "#9333ea", "#dc2626"];
    this.points.forEach((pts, i) => {
      g.strokeStyle = colors[i % colors.length]; g.lineWidth = 3; g.beginPath();
      pts.forEach(([t, v], j) => {
        const x = pad + (W - pad - 10) * (t - t0) / this.keep, y = H - pad - (H - 2 * pad) * v / vmax;
        j ? g.lineTo(x, y) : g.moveTo(x, y);
      });
      g.stroke();
      g.fillStyle = colors[i % colors.length];
      g.fillText(this.names[i] + " " + (pts.length ? (this.unit === "bytes" ? bytes(pts[pts.length - 1][1]) : pts[pts.length - 1][1].toFixed(1)) : ""), pad + 10 + i * 220, H - 8);
    });
  }
}

// ---- overview ----
async function overview() {
  const cards = el("div", { class: "cards" });
  const rates = new Chart("Messages per second", ["in", "out"], 5 * 60e3);
  const disk = new Chart("Disk", ["commit log", "file system used"], 5 * 60e3, "bytes");
  const extra = el("div");
  const clusterBox = el("div", { id: "cluster" });
  main.replaceChildren(el("h1", {}, "Overview"), cards, el("div", { class: "charts" }, rates.node, disk.node), clusterBox, extra);
  // The cluster's broker groups, as the name servers know them.
  every(5000, async () => {
    let c;
    try { c = await api("GET", "/cluster"); } catch (e) { clusterBox.replaceChildren(el("h2", {}, "Cluster"), errorBox(e)); return; }
    const note = c.source === "self" ? "this broker alone" + (c.error ? " (" + c.error + ")" : " (it registers with no name server)")
      : "from name server " + c.nameServers.join(", ");
    const rows = c.groups.flatMap((g) => g.brokers.map((b) => el("tr", { "data-broker": g.name + "/" + b.id, class: b.self ? "self" : "" },
      cell(g.name), cell(String(b.id), true), cell(b.addr), cell(b.role), cell(b.epoch === undefined ? "-" : String(b.epoch), true),
      cell(b.inSync ? b.inSync.join(", ") : "-"),
      cell(b.lagBytes !== undefined ? bytes(b.lagBytes) : b.replicaLagBytes ? Object.entries(b.replicaLagBytes).map(([id, n]) => id + ": " + bytes(n)).join(", ") : "-", true),
      cell(b.reachable ? (b.self ? "this node" : "up") + (b.error ? " · " + b.error : "") : "no answer: " + b.error))));
    clusterBox.replaceChildren(el("h2", {}, "Cluster " + c.cluster), el("p", { class: "muted", id: "cluster-source" }, note),
      table(["Broker group", "ID#", "Address", "Role", "Epoch#", "In sync", "Lag#", "State"], rows));
  });
  // moduleTables shows replication, the plugins and the modules compiled in.
  function moduleTables(o) {
    const st = o.status || {}, ha = st["cluster.ha"], pl = st["plugin.process"];
    const parts = [];
    if (ha) {
      parts.push(el("h2", {}, "Replication"));
      if (ha.role === "replica") {
        parts.push(el("p", { id: "replication" }, `replica of ${ha.master} · ${ha.lagBytes === undefined ? "not connected yet" : bytes(ha.lagBytes) + " behind"}`));
      } else {
        parts.push(el("p", { id: "replication", class: "muted" }, `master · ${(ha.replicas || []).length} ${(ha.replicas || []).length === 1 ? "replica" : "replicas"} connected`));
        if ((ha.replicas || []).length) parts.push(table(["Replica", "Address", "In sync", "Lag#", "Connected since"],
          ha.replicas.map((r) => el("tr", { "data-replica": r.id }, cell(r.id), cell(r.addr), cell(r.inSync ? "yes" : "no"), cell(bytes(r.lagBytes), true), cell(when(r.since))))));
      }
    }
    if (pl && pl.plugins.length) {
      parts.push(el("h2", {}, "Plugins"), table(["Plugin", "State", "Calls#", "Failures#", "Timeouts#", "Rejected#", "Restarts#"],
        pl.plugins.map((p) => el("tr", { "data-plugin": p.name }, cell(p.name), cell(p.up ? "up" : "down"), cell(fmt(p.calls), true),
          cell(fmt(p.failures), true), cell(fmt(p.timeouts), true), cell(fmt(p.rejects), true), cell(fmt(p.restarts), true)))));
    }
    if ((o.compiled || []).length) {
      parts.push(el("h2", {}, "Modules compiled in"), table(["Module", "State", "Version", "Go package"],
        o.compiled.map((m) => el("tr", { "data-module": m.id }, cell(m.id), cell(m.running ? "running" : "off"), cell(m.version), cell(m.package)))));
    }
    extra.replaceChildren(...parts);
  }
  let last;
  every(2000, async () => {
    let o;
    try { o = await api("GET", "/overview"); } catch (e) { cards.replaceChildren(errorBox(e)); return; }
    document.getElementById("node").textContent = `${o.cluster} / ${o.broker} (${o.role}) · karman ${o.version}`;
    const card = (k, v) => el("div", { class: "card" }, el("div", { class: "muted" }, k), el("div", { class: "v" }, v));
    cards.replaceChildren(
      card("Topics (system ones too)", fmt(o.topics)), card("Consumer groups", fmt(o.groups)), card("Consumers online", fmt(o.consumersOnline)),
      card("Messages stored", fmt(o.messages.stored)), card("Disk", o.disk.state + (o.disk.reason ? ": " + o.disk.reason : "")),
      card("Commit log", bytes(o.disk.logBytes)),
      el("div", { class: "card" }, el("div", { class: "muted" }, "Front-ends"),
        Object.keys(o.addrs).sort().map((k) => el("div", {}, `${k}: ${o.addrs[k]}`))),
      el("div", { class: "card" }, el("div", { class: "muted" }, "Modules"), (o.modules || []).map((m) => el("div", {}, m))));
    moduleTables(o);
    if (last && o.at > last.at) {
      const s = (o.at - last.at) / 1000;
      rates.add(o.at, [Math.max(0, (o.messages.in - last.messages.in) / s), Math.max(0, (o.messages.out - last.messages.out) / s)]);
    }
    disk.add(o.at, [o.disk.logBytes, o.disk.fileSystemUsed]);
    last = o;
  });
}

// ---- topics ----
async function topics() {
  const list = el("div");
  const form = el("form", { id: "create-topic", onsubmit: async (ev) => {
    ev.preventDefault();
    const f = ev.target;
    const body = { name: f.topicName.value.trim(), queues: Number(f.queues.value) };
    if (f.type.value) body.type = f.type.value;
    try { await api("POST", "/topics", body); toast(`topic ${body.name} created`); f.reset(); refresh(); } catch (e) { toast(e.message, true); }
  } },
    el("label", {}, "Name", el("input", { name: "topicName", required: true, pattern: "[A-Za-z0-9_%|-]+", maxlength: 127 })),
    el("label", {}, "Queues", el("input", { name: "queues", type: "number", min: 1, max: 1024, value: 8, required: true })),
    el("label", {}, "Type", el("select", { name: "type" }, ["", "NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED"].map((t) => el("option", { value: t }, t || "unspecified")))),
    el("button", { type: "submit" }, "Create topic"));
  main.replaceChildren(el("h1", {}, "Topics"), form, list);
  let last, lastAt;
  async function refresh() {
    let r;
    try { r = await api("GET", "/topics"); } catch (e) { list.replaceChildren(errorBox(e)); return; }
    const now = Date.now(), prev = {};
    if (last) for (const t of last) prev[t.name] = t;
    const s = lastAt ? (now - lastAt) / 1000 : 0;
    list.replaceChildren(table(["Topic", "Type", "Perm", "Queues#", "Stored#", "In#", "Out#", "In/s#", "Out/s#", ""],
      r.topics.map((t) => {
        const p = prev[t.name];
        const q = el("input", { type: "number", min: 1, max: 1024, value: t.writeQueues, class: "narrow", "aria-label": "queues of " + t.name });
        return el("tr", { "data-topic": t.name },
          el("td", {}, el("a", { href: "#/topics/" + encodeURIComponent(t.name) }, t.name)), cell(t.type || "-"), cell(t.perm),
          cell(`${t.readQueues}/${t.writeQueues}`, true), cell(fmt(t.depth), true), cell(fmt(t.messagesIn), true), cell(fmt(t.messagesOut), true),
          cell(p && s ? rate((t.messagesIn - p.messagesIn) / s) : "-", true), cell(p && s ? rate((t.messagesOut - p.messagesOut) / s) : "-", true),
          el("td", {}, q,
            el("button", { class: "secondary", onclick: async () => {
              try { await api("PUT", "/topics/" + encodeURIComponent(t.name), { queues: Number(q.value) }); toast(`topic ${t.name} now has ${q.value} queues`); refresh(); } catch (e) { toast(e.message, true); }
            } }, "Update"), " ",
            el("button", { class: "danger", onclick: async () => {
              if (!confirm(`Delete topic ${t.name} and its messages?`)) return;
              try { await api("DELETE", "/topics/" + encodeURIComponent(t.name)); toast(`topic ${t.name} deleted`); refresh(); } catch (e) { toast(e.message, true); }
            } }, "Delete")));
      })));
    last = r.topics; lastAt = now;
  }
  every(5000, refresh);
}

async function topic(name) {
  main.replaceChildren(el("h1", {}, "Topic " + name), el("p", { class: "muted" }, "Loading…"));
  let t;
  try { t = await api("GET", "/topics/" + encodeURIComponent(name)); } catch (e) { main.replaceChildren(el("h1", {}, "Topic " + name), errorBox(e)); return; }
  main.replaceChildren(el("h1", {}, "Topic " + name),
    el("p", {}, `type ${t.type || "unspecified"} · perm ${t.perm} · ${t.readQueues} read / ${t.writeQueues} write queues · ${fmt(t.depth)} messages stored`),
    el("h2", {}, "Queues"),
    table(["Queue#", "Min offset#", "Max offset#", "Last stored", ""], t.queues.map((q) => el("tr", {},
      cell(q.id, true), cell(fmt(q.minOffset), true), cell(fmt(q.maxOffset), true), cell(when(q.lastStored)),
      el("td", {}, el("a", { href: `#/messages?topic=${encodeURIComponent(name)}&queue=${q.id}&from=${q.minOffset}` }, "browse"))))),
    el("h2", {}, "Consumer groups"),
    t.groups.length ? el("ul", {}, t.groups.map((g) => el("li", {}, el("a", { href: "#/groups/" + encodeURIComponent(g) }, g)))) : el("p", { class: "muted" }, "none"));
}

// ---- groups ----
async function groups() {
  const list = el("div");
  main.replaceChildren(el("h1", {}, "Consumer groups"), list);
  every(5000, async () => {
    let r;
    try { r = await api("GET", "/groups"); } catch (e) { list.replaceChildren(errorBox(e)); return; }
    list.replaceChildren(table(["Group", "Online#", "Lag#", "Dead letters#", "FIFO", "Broadcast", "Max attempts#"], r.groups.map((g) => el("tr", { "data-group": g.name },
      el("td", {}, el("a", { href: "#/groups/" + encodeURIComponent(g.name) }, g.name)), cell(g.online, true), cell(fmt(g.lag), true),
      cell(fmt(g.deadLetters), true), cell(g.fifo ? "yes" : "no"), cell(g.broadcast ? "yes" : "no"), cell(g.maxAttempts, true)))));
  });
}

async function group(name) {
  const path = "/groups/" + encodeURIComponent(name);
  const info = el("div"), dead = el("div");
  const lag = new Chart("Lag over the last 10 minutes", ["lag"], 10 * 60e3);
  let seeded = false; // with the server's samples, on the first load
  const topicSel = el("select", { name: "topic", required: true });
  const reset = el("form", { id: "reset-offset", onsubmit: async (ev) => {
    ev.preventDefault();
    const f = ev.target;
    const t = f.time.value ? new Date(f.time.value).getTime() : NaN;
    if (!f.topic.value) { toast("choose a topic", true); return; }
    if (Number.isNaN(t)) { toast("choose a time", true); return; }
    try {
      const r = await api("POST", path + "/reset-offset", { topic: f.topic.value, time: t });
      toast(`offsets of ${name} in ${r.topic} reset to ${new Date(r.timestamp).toLocaleString()}`); load();
    } catch (e) { toast(e.message, true); }
  } },
    el("label", {}, "Topic", topicSel),
    el("label", {}, "To the first message stored at or after", el("input", { name: "time", type: "datetime-local", step: 1, required: true })),
    el("button", { type: "submit" }, "Reset offset"));
  main.replaceChildren(el("h1", {}, "Consumer group " + name), info, lag.node, el("h2", {}, "Reset offset by time"), reset, el("h2", {}, "Dead letters"), dead);
  async function load() {
    let g;
    try { g = await api("GET", path); } catch (e) { info.replaceChildren(errorBox(e)); return; }
    for (const k of ["members", "subscriptions", "topics", "queues"]) g[k] = g[k] || []; // left out when empty
    if (!seeded) {
      seeded = true;
      for (const p of g.lagHistory || []) lag.add(p.at, [p.lag]);
    }
    lag.add(Date.now(), [g.lag]);
    const chosen = topicSel.value;
    topicSel.replaceChildren(...g.topics.map((t) => el("option", { value: t.topic, selected: t.topic === chosen }, t.topic)));
    info.replaceChildren(
      el("p", {}, `${g.online} online · lag ${fmt(g.lag)} · ${fmt(g.deadLetters)} dead letters · max attempts ${g.maxAttempts}` + (g.fifo ? " · FIFO" : "") + (g.broadcast ? " · broadcast" : "")),
      el("h2", {}, "Members"),
      g.members.length ? table(["Client", "Address", "Protocol", "Language", "Version", "Consume type", "Last heartbeat"], g.members.map((m) => el("tr", { "data-member": m.clientId },
        cell(m.clientId), cell(m.addr || "-"), cell(m.protocol), cell(m.language || "-"), cell(m.version || "-"), cell(m.consumeType), cell(when(m.lastHeartbeat))))) : el("p", { class: "muted" }, "no consumer online"),
      el("h2", {}, "Subscriptions"),
      g.subscriptions.length ? el("ul", {}, g.subscriptions.map((s) => el("li", {}, `${s.topic}: ${s.type} ${s.expression}`))) : el("p", { class: "muted" }, "none known"),
      el("h2", {}, "Lag per queue"),
      table(["Topic", "Queue#", "Max offset#", "Consumer offset#", "Lag#"], g.queues.map((q) => el("tr", {},
        cell(q.topic), cell(q.queue, true), cell(fmt(q.maxOffset), true), cell(q.consumerOffset < 0 ? "none" : fmt(q.consumerOffset), true), cell(fmt(q.lag), true)))));
    let d;
    try { d = await api("GET", path + "/dead-letters?count=100"); } catch (e) { dead.replaceChildren(errorBox(e)); return; }
    dead.replaceChildren(el("p", {}, `${fmt(d.count)} dead letters` + (d.count > d.messages.length ? ` (the oldest ${d.messages.length} shown)` : "")),
      d.messages.length ? table(["Message id", "From topic", "Dead-lettered", "Attempts#", "Body", ""], d.messages.map((m) => el("tr", { "data-dead-letter": m.id },
        cell(m.id), cell(m.deadLetterOrigin || "-"), cell(when(m.storeTimestamp)), cell(m.reconsumeTimes, true), cell(preview(m)),
        el("td", {}, el("button", { onclick: async () => {
          try { const r = await api("POST", `${path}/dead-letters/${encodeURIComponent(m.id)}/resend`); toast(`resent ${m.id} to ${r.topic} (queue ${r.queue}, offset ${r.queueOffset})`); load(); } catch (e) { toast(e.message, true); }
        } }, "Resend"))))) : "");
  }
  every(5000, load);
}

// ---- messages ----
function preview(m) {
  const s = m.bodyEncoding === "utf-8" ? m.body : "(binary, " + m.bodySize + " bytes)";
  return s.length > 60 ? s.slice(0, 60) + "…" : s;
}
function bodyBytes(m) {
  if (m.bodyEncoding === "base64") return Uint8Array.from(atob(m.body), (c) => c.charCodeAt(0));
  return new TextEncoder().encode(m.body);
}
function showMessage(m, into) {
  const body = el("pre", {}), hist = el("div", {}, el("p", { class: "muted" }, "Loading…"));
  const mode = el("select", { "aria-label": "body view", onchange: () => render() }, ["text", "json", "hex"].map((v) => el("option", { value: v }, v)));
  function render() {
    if (mode.value === "hex") {
      const b = bodyBytes(m), lines = [];
      for (let i = 0; i < b.length; i += 16) {
        const row = Array.from(b.slice(i, i + 16));
        lines.push(i.toString(16).padStart(8, "0") + "  " + row.map((x) => x.toString(16).padStart(2, "0")).join(" ").padEnd(48) + "  " + row.map((x) => (x >= 32 && x < 127 ? String.fromCharCode(x) : ".")).join(""));
      }
      body.textContent = lines.join("\n");
    } else if (mode.value === "json") {
      try { body.textContent = JSON.stringify(JSON.parse(m.body), null, 2); } catch (e) { body.textContent = "not JSON: " + e.message; }
    } else body.textContent = m.bodyEncoding === "utf-8" ? m.body : "(binary: choose hex)";
  }
  render();
  const props = Object.keys(m.properties).sort();
  into.replaceChildren(el("h2", {}, "Message " + m.id),
    table(["Field", "Value"], [
      ["offset id", m.offsetId], ["topic", m.topic], ["queue / offset", `${m.queue} / ${m.queueOffset}`], ["tags", m.tags || "-"], ["keys", m.keys.join(" ") || "-"],
      ["born", `${when(m.bornTimestamp)} from ${m.bornHost || "-"}`], ["stored", `${when(m.storeTimestamp)} on ${m.storeHost || "-"}`],
      ["reconsume times", m.reconsumeTimes], ["dead letter of", m.deadLetterOrigin || "-"],
    ].map(([k, v]) => el("tr", {}, cell(k), cell(v)))),
    el("h2", {}, "Properties"), table(["Name", "Value"], props.map((k) => el("tr", {}, cell(k), cell(m.properties[k])))),
    el("h2", {}, `Body (${m.bodySize} bytes${m.bodyTruncated ? ", cut" : ""}) `, mode), body,
    el("h2", {}, "History"), hist);
  api("GET", `/messages/${encodeURIComponent(m.id)}/history?topic=${encodeURIComponent(m.topic)}`).then((h) => {
    hist.replaceChildren(table(["When", "What", "Group", "Topic", "Detail"], h.events.map((e) => el("tr", { "data-event": e.kind },
      cell(when(e.at)), cell(e.kind), cell(e.group || "-"), cell(e.topic), cell(e.detail)))));
  }, (e) => hist.replaceChildren(errorBox(e)));
}
function messageTable(ms, detail) {
  return table(["Id", "Topic", "Queue#", "Offset#", "Stored", "Tags", "Keys", "Body"], ms.map((m) => el("tr", {},
    el("td", {}, el("button", { class: "link", type: "button", onclick: () => showMessage(m, detail) }, m.id)), cell(m.topic), cell(m.queue, true), cell(m.queueOffset, true),
    cell(when(m.storeTimestamp)), cell(m.tags || "-"), cell(m.keys.join(" ") || "-"), cell(preview(m)))));
}
async function messages(params) {
  const results = el("div"), detail = el("div");
  const run = (f) => async (ev) => {
    ev.preventDefault();
    try { await f(ev.target); } catch (e) { results.replaceChildren(errorBox(e)); detail.replaceChildren(); }
  };
  const q = (o) => new URLSearchParams(Object.entries(o).filter(([, v]) => v !== "" && v !== undefined)).toString();
  const ms = (v) => (v ? String(new Date(v).getTime()) : "");
  main.replaceChildren(el("h1", {}, "Messages"),
    el("form", { id: "by-id", onsubmit: run(async (f) => {
      const m = await api("GET", "/messages/" + encodeURIComponent(f.msgId.value.trim()) + (f.topic.value ? "?" + q({ topic: f.topic.value }) : ""));
      results.replaceChildren(messageTable([m], detail)); showMessage(m, detail);
    }) }, el("label", {}, "Message id", el("input", { name: "msgId", required: true, size: 34 })), el("label", {}, "Topic (optional)", el("input", { name: "topic" })), el("button", {}, "Find by id")),
    el("form", { id: "by-key", onsubmit: run(async (f) => {
      const r = await api("GET", "/messages?" + q({ topic: f.topic.value, key: f.key.value, limit: 100 }));
      results.replaceChildren(messageTable(r.messages, detail), r.truncated ? el("p", { class: "muted" }, "more than 100: narrow the search") : ""); detail.replaceChildren();
    }) }, el("label", {}, "Topic", el("input", { name: "topic", required: true })), el("label", {}, "Key", el("input", { name: "key", required: true })), el("button", {}, "Find by key")),
    el("form", { id: "by-time", onsubmit: run(async (f) => {
      const r = await api("GET", "/messages?" + q({ topic: f.topic.value, begin: ms(f.begin.value), end: ms(f.end.value), limit: 100 }));
      results.replaceChildren(messageTable(r.messages, detail), r.truncated ? el("p", { class: "muted" }, "more than 100: narrow the range") : ""); detail.replaceChildren();
    }) }, el("label", {}, "Topic", el("input", { name: "topic", required: true })), el("label", {}, "Stored from", el("input", { name: "begin", type: "datetime-local", step: 1 })),
      el("label", {}, "to", el("input", { name: "end", type: "datetime-local", step: 1 })), el("button", {}, "Find by time")),
    el("form", { id: "browse", onsubmit: run(async (f) => {
      const p = await api("GET", `/topics/${encodeURIComponent(f.topic.value)}/queues/${encodeURIComponent(f.queue.value)}/messages?` + q({ from: f.from.value, count: f.count.value }));
      results.replaceChildren(el("p", { class: "muted" }, `queue ${p.queue} holds offsets ${p.minOffset} to ${p.maxOffset}`), messageTable(p.messages, detail),
        p.nextOffset < p.maxOffset ? el("button", { class: "secondary", onclick: () => { f.from.value = p.nextOffset; f.requestSubmit(); } }, "Next page") : "");
      detail.replaceChildren();
    }) }, el("label", {}, "Topic", el("input", { name: "topic", required: true, value: params.get("topic") || "" })),
      el("label", {}, "Queue", el("input", { name: "queue", type: "number", min: 0, required: true, value: params.get("queue") || 0, class: "narrow" })),
      el("label", {}, "From offset", el("input", { name: "from", type: "number", min: 0, value: params.get("from") || 0 })),
      el("label", {}, "Count", el("input", { name: "count", type: "number", min: 1, max: 1000, value: 32, class: "narrow" })), el("button", {}, "Browse queue")),
    results, detail);
  if (params.get("topic") && params.get("queue") !== null) document.getElementById("browse").requestSubmit();
}

// ---- MQTT ----
async function mqtt() {
  const sessions = el("div"), retained = el("div");
  main.replaceChildren(el("h1", {}, "MQTT"), el("h2", {}, "Sessions"), sessions, el("h2", {}, "Retained messages"), retained);
  const expiry = (s) => (!s.persistent ? "with its connection" : s.expirySeconds < 0 ? "never" : s.expirySeconds + " s");
  every(5000, async () => {
    let r;
    try { r = await api("GET", "/mqtt/sessions"); } catch (e) { sessions.replaceChildren(errorBox(e)); retained.replaceChildren(); return; }
    sessions.replaceChildren(r.sessions.length ? table(["Client id", "State", "Protocol", "Clean", "Expires", "Subscriptions (QoS, queued)", "In flight#", "Queued#"],
      r.sessions.map((s) => el("tr", { "data-client": s.clientId },
        cell(s.clientId), cell(s.connected ? "connected from " + s.addr : "disconnected " + when(s.disconnectedAt)), cell(s.protocol),
        cell(s.cleanSession ? "yes" : "no"), cell(expiry(s)),
        el("td", {}, s.subscriptions.length ? s.subscriptions.map((x) => el("div", { "data-filter": x.filter }, `${x.filter} (QoS ${x.qos}, ${fmt(x.queued)} queued)`)) : el("span", { class: "muted" }, "none")),
        cell(fmt(s.inflight), true), cell(fmt(s.queued), true)))) : el("p", { class: "muted" }, "no sessions"));
    let m;
    try { m = await api("GET", "/mqtt/retained"); } catch (e) { retained.replaceChildren(errorBox(e)); return; }
    retained.replaceChildren(m.messages.length ? table(["Topic", "Size#", "QoS#", "Publisher", "Expires"],
      m.messages.map((x) => el("tr", { "data-topic": x.topic }, cell(x.topic), cell(bytes(x.size), true), cell(x.qos, true), cell(x.publisher || "-"), cell(x.expireAt ? when(x.expireAt) : "never"))))
      : el("p", { class: "muted" }, "no retained messages"));
  });
}

// ---- routing ----
function route() {
  timers.forEach(clearInterval); timers = [];
  const [path, query] = (location.hash.slice(1) || "/overview").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(query || "");
  document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.page === parts[0]));
  switch (parts[0]) {
    case "topics": return parts[1] ? topic(parts[1]) : topics();
    case "groups": return parts[1] ? group(parts[1]) : groups();
    case "messages": return messages(params);
    case "mqtt": return mqtt();
    default: return overview();
  }
}
window.addEventListener("hashchange", route);
route();
// The MQTT page is offered while the MQTT front-end runs.
api("GET", "/overview").then((o) => { document.getElementById("nav-mqtt").hidden = !(o.modules || []).includes("frontend.mqtt"); }).catch(() => {});
