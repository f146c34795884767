// raftcat status page: polls this node's /ui/api/overview and draws it.
// Plain DOM and inline SVG; every value is set as text, never as markup.
(() => {
  "use strict";

  const REFRESH_MS = 2000;
  const SVG = "http://www.w3.org/2000/svg";
  const MAX_CHANGES = 10;
  const MAX_ERRORS = 25;
  const OBJECT_LABELS = {
    catalog: "catalogs", schema: "schemas", namespace: "namespaces", table: "tables",
    staging_table: "staging tables", share: "shares", recipient: "recipients", lance_version: "Lance versions",
  };

  const $ = (id) => document.getElementById(id);
  let latest = null;

  // ---- polling ----

  // A node run with --auth=token wants a credential: an API token given
  // in the page's fragment (#token=...) or typed in when asked, kept for
  // this tab only.
  const TOKEN_KEY = "raftcat-token";
  function token() {
    const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
    if (m) {
      sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
      history.replaceState(null, "", location.pathname + location.search);
    }
    return sessionStorage.getItem(TOKEN_KEY) || "";
  }

  async function refresh() {
    try {
      const headers = { Accept: "application/json" };
      if (token()) headers.Authorization = "Bearer " + token();
      const resp = await fetch("api/overview", { cache: "no-store", headers });
      if (resp.status === 401) {
        const typed = window.prompt("This node needs an API token (raftcat auth token create):", "");
        if (typed) sessionStorage.setItem(TOKEN_KEY, typed.trim());
        throw new Error("HTTP 401: a token is needed");
      }
      if (!resp.ok) throw new Error("HTTP " + resp.status);
      latest = await resp.json();
      render(latest);
      setLive("ok", "Updated " + clock(latest.generated_at_ms));
    } catch (err) {
      setLive("bad", "Node unreachable (" + err.message + ")");
    } finally {
      setTimeout(refresh, REFRESH_MS);
    }
  }

  function setLive(state, text) {
    $("live").className = "live " + state;
    $("live-text").textContent = text;
  }

  function render(o) {
    renderHeader(o);
    renderTiles(o);
    renderMembers(o.members);
    renderCharts(o.metrics, o.generated_at_ms);
    renderFormats(o.tables_by_format, o.object_counts, o.state_index);
    renderLeaderChanges(o.leader_changes, o.generated_at_ms);
    renderErrors(o.recent_errors);
  }

  // ---- DOM helpers ----

  // el builds an element: props sets class, text, title and data-*
  // attributes; children are elements or strings.
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    setProps(e, props);
    for (const c of children) {
      if (c !== null && c !== undefined) e.append(c);
    }
    return e;
  }

  function svg(tag, attrs, ...children) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const c of children) e.append(c);
    return e;
  }

  function setProps(e, props) {
    if (!props) return;
    if (props.class) e.className = props.class;
    if (props.text !== undefined) e.textContent = props.text;
    if (props.title) e.title = props.title;
    for (const [k, v] of Object.entries(props.data || {})) e.dataset[k] = v;
  }

  function setText(id, text, cls) {
    const e = $(id);
    e.textContent = text;
    if (cls !== undefined) e.className = cls;
  }

  function replaceRows(tbody, rows) {
    tbody.replaceChildren(...rows);
  }

  // ---- formatting ----

  const intFmt = new Intl.NumberFormat("en-US");

  function int(n) { return n === null || n === undefined ? "—" : intFmt.format(n); }

  function rate(v) {
    if (v === null || v === undefined) return "—";
    if (v === 0) return "0";
    if (v < 10) return v.toFixed(2).replace(/\.?0+$/, "");
    if (v < 100) return v.toFixed(1).replace(/\.0$/, "");
    return intFmt.format(Math.round(v));
  }

  function ms(v) {
    if (v === null || v === undefined) return "—";
    if (v < 1) return v.toFixed(2) + " ms";
    if (v < 10) return v.toFixed(1) + " ms";
    if (v < 1000) return Math.round(v) + " ms";
    return (v / 1000).toFixed(v < 10000 ? 2 : 1) + " s";
  }

  // axisMs labels a latency axis: round numbers need no decimals.
  function axisMs(v) {
    return v >= 1000 ? rate(v / 1000) + " s" : rate(v) + " ms";
  }

  function pad(n) { return String(n).padStart(2, "0"); }

  function clock(t) {
    const d = new Date(t);
    return pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
  }

  function ago(t, now) {
    const s = Math.max(0, Math.round((now - t) / 1000));
    if (s < 60) return s + " s ago";
    if (s < 3600) return Math.floor(s / 60) + " min ago";
    if (s < 86400) return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min ago";
    return Math.floor(s / 86400) + " d ago";
  }

  function plural(n, one, many) { return int(n) + " " + (n === 1 ? one : many); }

  // ---- header and tiles ----

  function renderHeader(o) {
    setText("node-id", o.node_id);
    setText("node-role", o.role, "role " + o.role);
    setText("footer-node", o.node_id);
    setText("footer-span", Math.round(o.metrics.span_s / 60) + " minutes");
    document.title = "raftcat · " + o.node_id + " · cluster status";
  }

  function renderTiles(o) {
    const members = o.members;
    const leader = members.find((m) => m.reachable && m.role === "leader");
    setText("t-leader", o.leader_id || "none", o.leader_id ? "value" : "value bad");
    setText("t-leader-hint", "term " + int(o.term));

    const healthy = members.filter((m) => health(m).cls === "ok").length;
    setText("t-members", healthy + " / " + members.length, healthy < members.length ? "value bad" : "value");
    const ap = o.autopilot;
    setText("t-members-hint", ap ? "healthy · tolerates " + plural(ap.failure_tolerance, "failure", "failures")
      : plural(members.filter((m) => m.voter).length, "voter", "voters"));

    const self = members.find((m) => m.self);
    setText("t-commit", int(leader ? leader.commit_index : self && self.commit_index));
    setText("t-commit-hint", self ? "this node applied " + int(self.applied_index) : "");

    setText("t-commands", rate(o.metrics.commands_per_s));
    setText("t-p99", ms(o.metrics.p99_ms));
    setText("t-p99-hint", rate(o.metrics.writes_per_s) + " writes/s answered here");

    const formats = Object.keys(o.tables_by_format || {}).length;
    setText("t-tables", int(sum(o.tables_by_format)));
    setText("t-tables-hint", plural(formats, "format", "formats"));
  }

  function sum(counts) {
    return Object.values(counts || {}).reduce((a, b) => a + b, 0);
  }

  // ---- members ----

  // health classifies a member: ok when gossip sees it alive and it
  // answered, bad when it could not be reached.
  function health(m) {
    if (!m.reachable) return { cls: "bad", text: "unreachable" };
    if (m.gossip !== "alive") return { cls: "warn", text: m.gossip };
    return { cls: "ok", text: "healthy" };
  }

  function renderMembers(members) {
    const rows = members.map((m) => el("tr", { class: m.self ? "self" : "", data: { member: m.id, role: m.role } },
      el("td", null, el("span", { class: "node-name", text: m.id }),
        m.self ? el("span", { class: "chip", text: "this node" }) : null,
        m.voter ? null : el("span", { class: "chip plain", text: "non-voter" })),
      el("td", null, el("span", { class: "role " + m.role, text: m.role })),
      healthCell(m),
      numCell(m.term), numCell(m.commit_index), numCell(m.applied_index),
      lagCell(m),
      el("td", { class: "mono", text: m.http_addr || "—" })));
    replaceRows($("members").tBodies[0], rows);
  }

  function healthCell(m) {
    const h = health(m);
    const detail = m.reachable ? "gossip " + m.gossip + contact(m) : m.error || "";
    return el("td", { title: m.error || "" }, el("span", { class: "health " + h.cls, text: h.text }),
      el("span", { class: "sub", text: detail }));
  }

  function contact(m) {
    if (m.role === "leader" || m.last_contact_ms === null || m.last_contact_ms < 0) return "";
    return " · leader heard " + int(m.last_contact_ms) + " ms ago";
  }

  function numCell(v) {
    return el("td", { class: "num" }, v === null ? el("span", { class: "dash", text: "—" }) : int(v));
  }

  function lagCell(m) {
    if (m.lag === null || m.lag === undefined) return numCell(null);
    const text = m.lag === 0 ? "in sync" : int(m.lag) + " behind";
    return el("td", { class: "num" }, el("span", { class: "lag " + (m.lag === 0 ? "ok" : "behind"), text: text }));
  }

  // ---- charts ----

  function renderCharts(metrics, now) {
    const series = metrics.series;
    const span = metrics.span_s * 1000;
    drawChart($("chart-commands"), series.map((p) => [p.t, p.commands_per_s]), now, span,
      { format: (v) => rate(v) + " /s", axis: rate, empty: "No commands applied in this window" });
    drawChart($("chart-p99"), series.map((p) => [p.t, p.p99_ms]), now, span,
      { format: ms, axis: axisMs, empty: "No writes answered by this node in this window" });
    $("c-commands-now").replaceChildren(el("strong", { text: rate(metrics.commands_per_s) }), " /s, last minute");
    $("c-p99-now").replaceChildren(el("strong", { text: ms(metrics.p99_ms) }), " last minute");
  }

  const PAD = { left: 48, right: 10, top: 10, bottom: 24 };

  // drawChart draws points ([time ms, value or null]) over the span
  // before now as a line over an area, with a gap where a value is null.
  // The SVG carries data-latest, data-max and data-points for tests.
  function drawChart(box, points, now, span, opts) {
    const w = Math.max(box.clientWidth, 200);
    const h = Math.max(box.clientHeight, 120);
    const values = points.map((p) => p[1]).filter((v) => v !== null);
    const max = values.length ? Math.max(...values) : 0;
    const y = yScale(max, h);
    const x = (t) => PAD.left + Math.max(0, Math.min(1, (t - (now - span)) / span)) * (w - PAD.left - PAD.right);
    const root = svg("svg", { width: w, height: h, viewBox: "0 0 " + w + " " + h, role: "img" });
    root.append(...yAxis(y, w, opts.axis), ...xAxis(x, now, span, h));
    root.append(...lines(points, x, y.at, h - PAD.bottom));
    if (max === 0) root.append(svg("text", { class: "blank", x: (PAD.left + w - PAD.right) / 2, y: h / 2 - 8 }, opts.empty));
    root.dataset.latest = values.length ? String(values[values.length - 1]) : "";
    root.dataset.max = String(max);
    root.dataset.points = String(values.length);
    box.replaceChildren(root);
    hover(box, root, points.filter((p) => p[1] !== null).map((p) => ({ x: x(p[0]), y: y.at(p[1]), t: p[0], v: p[1] })), opts.format);
  }

  // yScale maps values to pixels; top is a round number above max.
  function yScale(max, h) {
    const step = niceStep((max || 1) / 4);
    const top = Math.max(step, Math.ceil(max / step) * step);
    const inner = h - PAD.top - PAD.bottom;
    return { top: top, step: step, at: (v) => PAD.top + inner * (1 - v / top) };
  }

  function niceStep(raw) {
    const pow = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / pow;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * pow;
  }

  function yAxis(y, w, format) {
    const out = [];
    for (let v = 0; v <= y.top + y.step / 2; v += y.step) {
      const py = y.at(v);
      out.push(svg("line", { class: v === 0 ? "baseline" : "gridline", x1: PAD.left, x2: w - PAD.right, y1: py, y2: py }));
      out.push(svg("text", { class: "axis y", x: PAD.left - 8, y: py + 4 }, format(v)));
    }
    return out;
  }

  // xAxis labels whole two-minute marks with the clock time.
  function xAxis(x, now, span, h) {
    const every = 2 * 60 * 1000;
    const out = [];
    for (let t = Math.ceil((now - span) / every) * every; t <= now; t += every) {
      const d = new Date(t);
      out.push(svg("text", { class: "axis x", x: x(t), y: h - 6 }, pad(d.getHours()) + ":" + pad(d.getMinutes())));
    }
    return out;
  }

  // lines draws each run of non-null values as an area and a line; a run
  // of one value is drawn as a dot.
  function lines(points, x, y, base) {
    const out = [];
    for (const run of runs(points)) {
      if (run.length === 1) {
        out.push(svg("circle", { class: "dotted", cx: x(run[0][0]), cy: y(run[0][1]), r: 2.5 }));
        continue;
      }
      const d = run.map((p, i) => (i ? "L" : "M") + x(p[0]).toFixed(1) + " " + y(p[1]).toFixed(1)).join("");
      const area = d + "L" + x(run[run.length - 1][0]).toFixed(1) + " " + base + "L" + x(run[0][0]).toFixed(1) + " " + base + "Z";
      out.push(svg("path", { class: "area", d: area }), svg("path", { class: "line", d: d }));
    }
    return out;
  }

  function runs(points) {
    const out = [];
    let cur = [];
    for (const p of points) {
      if (p[1] === null) {
        if (cur.length) out.push(cur);
        cur = [];
      } else {
        cur.push(p);
      }
    }
    if (cur.length) out.push(cur);
    return out;
  }

  // hover shows the value nearest the pointer.
  function hover(box, root, pts, format) {
    const cursor = svg("line", { class: "cursor", y1: PAD.top, y2: root.height.baseVal.value - PAD.bottom, visibility: "hidden" });
    const marker = svg("circle", { class: "marker", r: 4, visibility: "hidden" });
    const tip = el("div", { class: "tooltip" });
    tip.hidden = true;
    root.append(cursor, marker);
    box.append(tip);
    root.addEventListener("mousemove", (ev) => {
      const px = ev.clientX - root.getBoundingClientRect().left;
      const p = nearest(pts, px);
      if (!p) return;
      for (const [k, v] of [["x1", p.x], ["x2", p.x], ["visibility", "visible"]]) cursor.setAttribute(k, v);
      for (const [k, v] of [["cx", p.x], ["cy", p.y], ["visibility", "visible"]]) marker.setAttribute(k, v);
      tip.textContent = clock(p.t) + "  ·  " + format(p.v);
      tip.hidden = false;
      tip.style.left = Math.min(p.x + 10, box.clientWidth - tip.offsetWidth) + "px";
    });
    root.addEventListener("mouseleave", () => {
      cursor.setAttribute("visibility", "hidden");
      marker.setAttribute("visibility", "hidden");
      tip.hidden = true;
    });
  }

  function nearest(pts, px) {
    let best = null;
    for (const p of pts) {
      if (!best || Math.abs(p.x - px) < Math.abs(best.x - px)) best = p;
    }
    return best;
  }

  // ---- tables by format ----

  function renderFormats(byFormat, objects, index) {
    const entries = Object.entries(byFormat || {}).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
    const top = entries.length ? entries[0][1] : 0;
    const rows = entries.map(([fmt, n]) => {
      const fill = el("span", { class: "fill f-" + fmt.toLowerCase() });
      fill.style.width = Math.max(2, (100 * n) / top) + "%";
      return el("div", { class: "bar-row", data: { format: fmt, count: n } },
        el("span", { class: "fmt", text: fmt }), el("span", { class: "track" }, fill), el("span", { class: "count", text: int(n) }));
    });
    $("formats").replaceChildren(...(rows.length ? rows : [el("p", { class: "empty", text: "No tables yet." })]));
    const kinds = Object.keys(OBJECT_LABELS).filter((k) => k in (objects || {}) && (objects[k] > 0 || ["catalog", "schema", "table"].includes(k)));
    $("objects").replaceChildren(...kinds.map((k) => el("span", { class: "object" }, el("strong", { text: int(objects[k]) }), OBJECT_LABELS[k])));
    setText("state-index", "This node's state at index " + int(index));
  }

  // ---- leadership changes ----

  function renderLeaderChanges(changes, now) {
    const rows = changes.slice(0, MAX_CHANGES).map((c) => el("tr", { data: { term: c.term, leader: c.leader_id } },
      el("td", null, clock(c.at_unix_ms), el("span", { class: "sub", text: ago(c.at_unix_ms, now) })),
      el("td", { class: "num" }, int(c.term)),
      el("td", null, c.leader_id ? el("span", { class: "node-name", text: c.leader_id }) : el("span", { class: "dash", text: "none (election)" }))));
    replaceRows($("leader-changes").tBodies[0], rows);
    $("leader-changes").hidden = rows.length === 0;
    $("leader-changes-empty").hidden = rows.length !== 0;
  }

  // ---- recent warnings and errors ----

  function renderErrors(recent) {
    const items = recent.records.slice(0, MAX_ERRORS).map((r) => {
      const lvl = r.level.toLowerCase().startsWith("warn") ? "warn" : "error";
      const attrs = Object.entries(r.attrs || {}).map(([k, v]) => el("span", { class: "attr" }, el("b", { text: k + "=" }), v));
      return el("li", null, el("span", { class: "level " + lvl, text: r.level }),
        el("time", { text: clock(Date.parse(r.time)), title: r.time }),
        el("div", { class: "msg" }, r.message, el("div", null, ...attrs)));
    });
    $("errors").replaceChildren(...items);
    const empty = $("errors-empty");
    empty.hidden = items.length !== 0;
    empty.className = recent.kept ? "empty ok" : "empty";
    empty.textContent = recent.kept ? "No warnings or errors logged since this node started."
      : "This node keeps no log of its warnings and errors, so none are shown.";
  }

  window.addEventListener("resize", () => { if (latest) renderCharts(latest.metrics, latest.generated_at_ms); });
  refresh();
})();
