// The sitesync dashboard: fills the page from the JSON API every few seconds.
// No framework and no CDN (the dashboard must work offline); every value is set with
// textContent, never innerHTML, because URLs and errors come from the crawled web.
"use strict";

const REFRESH_MS = Number(document.body.dataset.refreshMs) || 2000;
const $ = (id) => document.getElementById(id);
let selectedRun = null;
let selectedStatus = null;
let busy = false;

// Which buttons make sense in each status (the store still has the last word: 409).
const ACTIONS = {
  queued: ["cancel"],
  running: ["pause", "stop", "cancel"],
  paused: ["resume", "stop", "cancel"],
  stopped: ["resume", "cancel"],
  failed: ["resume", "cancel"],
  completed: [],
  cancelled: [],
};

async function api(path, options) {
  const response = await fetch(path, { credentials: "same-origin", ...options });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new Error(body.error || `${response.status} ${response.statusText}`);
  }
  return body;
}

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const cell of cells) {
    const td = cell instanceof Node ? el("td") : el("td", cell);
    if (cell instanceof Node) td.appendChild(cell);
    if (typeof cell === "number") td.className = "num";
    tr.appendChild(td);
  }
  return tr;
}

function fill(tableId, rows, empty) {
  const body = $(tableId).tBodies[0];
  body.replaceChildren(...rows);
  if (!rows.length) {
    const td = el("td", empty, "muted");
    td.colSpan = $(tableId).tHead.rows[0].cells.length;
    const tr = document.createElement("tr");
    tr.appendChild(td);
    body.appendChild(tr);
  }
}

const fmt = {
  int: (n) => Number(n).toLocaleString("en"),
  rate: (n) => Number(n).toFixed(1),
  bytes: (n) => {
    const units = ["B", "KB", "MB", "GB", "TB"];
    let value = n, unit = 0;
    while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
    return unit ? `${value.toFixed(1)} ${units[unit]}` : `${value} B`;
  },
  time: (t) => (t ? new Date(t * 1000).toLocaleTimeString() : "–"),
  ago: (t) => {
    if (!t) return "–";
    const s = Math.max(0, Date.now() / 1000 - t);
    if (s < 90) return `${s.toFixed(0)} s ago`;
    if (s < 7200) return `${Math.floor(s / 60)} min ago`;
    return `${Math.floor(s / 3600)} h ago`;
  },
};

function statusBadge(status) {
  return el("span", status, `status ${status}`);
}

function renderRuns(runs) {
  fill("runs", runs.map((run) => {
    const tr = row([
      run.id, statusBadge(run.status), run.seeds.slice(0, 2).join(", "),
      run.counters.completed, run.counters.pending, run.counters.assigned, run.counters.failed,
      fmt.rate(run.pages_per_second), run.idle_reasons.join("; "),
    ]);
    tr.dataset.run = run.id;
    tr.className = run.id === selectedRun ? "selected" : "";
    tr.addEventListener("click", () => select(run.id));
    return tr;
  }), "no runs yet: start one with 'sitesync crawl URL'");
}

function renderDetail(detail) {
  const run = detail.run;
  selectedStatus = run.status;
  $("run").hidden = false;
  $("run-id").textContent = run.id;
  $("run-status").textContent = run.status;
  $("run-status").className = `status ${run.status}`;
  $("run-reason").textContent = run.status_reason || "";
  const c = run.counters;
  $("c-completed").textContent = fmt.int(c.completed);
  $("c-pages").textContent = fmt.int(c.pages_fetched);
  $("c-pending").textContent = fmt.int(c.pending);
  $("c-in-flight").textContent = fmt.int(c.assigned);
  $("c-failed").textContent = fmt.int(c.failed);
  $("c-retries").textContent = fmt.int(c.retries);
  $("c-rate").textContent = fmt.rate(run.pages_per_second);
  $("c-bytes").textContent = fmt.bytes(c.bytes_fetched);
  const idle = $("idle");
  idle.hidden = !run.idle_reasons.length;
  idle.replaceChildren(...run.idle_reasons.map((reason) => el("li", reason)));
  const slowed = $("slowed");
  slowed.hidden = !run.slowed_hosts.length;
  slowed.replaceChildren(...run.slowed_hosts.map((text) => el("li", text)));
  for (const button of document.querySelectorAll("[data-action]")) {
    button.disabled = busy || !(ACTIONS[run.status] || []).includes(button.dataset.action);
  }
  renderChart(detail.samples);
  renderHosts(detail.hosts);
  fill("workers", detail.workers.map((w) => row([
    w.worker_id, `${w.machine} / ${w.pid}`, w.leased, fmt.ago(w.last_heartbeat),
    w.stopped_at ? "stopped" : w.live ? "live" : "silent",
  ])), "no worker has joined");
  fill("outcomes", detail.outcomes.map((o) => row([o.outcome, o.status_class, o.tasks])),
    "nothing finished yet");
}

function renderHosts(hosts) {
  fill("hosts", hosts.map((h) => {
    const d = h.domain;
    const domain = d ? [
      d.canonical_host && d.canonical_host !== h.host ? `→ ${d.canonical_host}` : "",
      d.aliases.length ? `aliases: ${d.aliases.join(", ")}` : "",
      d.stale ? "stale" : "", d.active === false ? "inactive" : "",
    ].filter(Boolean).join("; ") : "";
    const pace = h.pace_reason ? `${h.pace_delay.toFixed(1)} s, ${h.pace_reason}` : "";
    return row([h.host, h.pages_crawled, h.errors, h.pending, h.status,
      h.claimed_by || "–", domain, pace]);
  }), "no host counted yet");
}

function renderChart(samples) {
  const svg = $("chart");
  const W = 800, H = 180, PAD = 6;
  const line = (values, max, cls) => {
    if (values.length < 2) return null;
    const points = values.map((v, i) => {
      const x = PAD + (i * (W - 2 * PAD)) / (values.length - 1);
      const y = H - PAD - (max ? (v / max) * (H - 2 * PAD) : 0);
      return `${x.toFixed(1)},${y.toFixed(1)}`;
    });
    const path = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    path.setAttribute("points", points.join(" "));
    path.setAttribute("class", cls);
    return path;
  };
  const rates = samples.slice(1).map((s) => s.pages_per_second);
  const pending = samples.slice(1).map((s) => s.pending + s.in_flight);
  const rateMax = Math.max(1, ...rates);
  const pendingMax = Math.max(1, ...pending);
  svg.replaceChildren(...[line(pending, pendingMax, "pending"), line(rates, rateMax, "rate")]
    .filter(Boolean));
  if (samples.length < 3) {
    const text = document.createElementNS("http://www.w3.org/2000/svg", "text");
    text.setAttribute("x", W / 2);
    text.setAttribute("y", H / 2);
    text.setAttribute("class", "empty");
    text.textContent = "collecting samples…";
    svg.appendChild(text);
  }
  $("chart-rate-max").textContent = fmt.rate(rateMax);
  $("chart-pending-max").textContent = fmt.int(pendingMax);
  $("chart-span").textContent = samples.length > 1
    ? `${fmt.time(samples[0].at)} – ${fmt.time(samples[samples.length - 1].at)}` : "";
}

// One click from a failed URL to its whole story (attempts, robots, scope, where found).
function whyLink(runId, url) {
  const link = el("a", " why", "why-link");
  link.href = `/api/runs/${runId}/why?url=${encodeURIComponent(url)}`;
  link.target = "_blank";
  link.rel = "noopener";
  return link;
}

function renderErrors(errors) {
  $("errors-total").textContent = `(${fmt.int(errors.failed)} failed)`;
  const groups = errors.groups.map((group) => {
    const box = el("details", null, "error-group");
    box.appendChild(el("summary", `${group.outcome}: ${fmt.int(group.count)}`));
    const list = el("ul");
    for (const failed of group.recent) {
      const item = el("li");
      item.appendChild(el("code", failed.url));
      item.appendChild(whyLink(errors.run_id, failed.url));
      item.appendChild(el("span", ` ${failed.last_error || ""} (${failed.attempts} attempts)`, "muted"));
      list.appendChild(item);
    }
    box.appendChild(list);
    return box;
  });
  $("errors").replaceChildren(...(groups.length ? groups : [el("p", "no failed URL", "muted")]));
}

function renderRedirects(chains) {
  fill("redirects", chains.map((chain) => row([
    chain.url, chain.hops.map((hop) => `${hop.status} → ${hop.to_url}`).join("  ·  "),
    chain.final_url || "",
  ])), "no redirect followed");
}

function renderNavigation(navigation) {
  // Each sample is {url, found_in} (older records: a plain URL string).
  const urlOf = (item) => (typeof item === "string" ? item : item.url);
  fill("navigation", navigation.samples.map((sample) => {
    const urls = (sample.data.urls || []).map(urlOf);
    // A URL that failed later in the run is marked (the sampler saw only the root page).
    const short = (sample.data.urls || []).map((item) =>
      urlOf(item).replace(/^https?:\/\/[^/]+/, "") + (item.failed ? ` ✗(${item.failed})` : ""));
    const list = el("span", short.join("  "));
    list.title = urls.join("\n");
    return row([sample.url, urls.length, sample.data.shortfall || "", list]);
  }), "no navigation sample (yet)");
}

function renderChanges(report) {
  $("changes-since").textContent = report.since_run_id
    ? `since run ${report.since_run_id}` : "(no earlier scan: every page is new)";
  const rows = report.hosts.length > 1 ? [...report.hosts, report.total] : report.hosts;
  fill("changes", rows.map((h) => row([
    h.host === "*" ? "all hosts" : h.host, h.new, h.changed, h.unchanged_not_modified,
    h.unchanged_same_content, h.unchanged_per_sitemap, h.gone, h.not_reached, h.requests,
    fmt.bytes(h.bytes_downloaded), fmt.bytes(h.bytes_full_fetch),
  ])), "no page seen (yet)");
}

function showMessage(text, isError) {
  const box = $("message");
  box.hidden = !text;
  box.textContent = text || "";
  box.className = isError ? "message error" : "message";
}

async function act(action) {
  if (selectedRun === null) return;
  if (!window.confirm(`${action[0].toUpperCase()}${action.slice(1)} run ${selectedRun}?`)) return;
  busy = true;
  try {
    const run = await api(`api/runs/${selectedRun}/${action}`, { method: "POST" });
    showMessage(`run ${run.id} is now ${run.status}`, false);
  } catch (error) {
    showMessage(error.message, true);
  } finally {
    busy = false;
    refresh();
  }
}

function select(runId) {
  selectedRun = runId;
  history.replaceState(null, "", `#run=${runId}`);
  showMessage("", false);
  refresh();
}

async function refresh() {
  try {
    const [status, runs] = await Promise.all([api("api/status"), api("api/runs?limit=20")]);
    $("total-active").textContent = fmt.int(status.active_runs.length);
    $("total-pending").textContent = fmt.int(status.pending_total);
    $("total-in-flight").textContent = fmt.int(status.in_flight_total);
    if (selectedRun === null && runs.length) {
      const active = status.active_runs[status.active_runs.length - 1];
      selectedRun = active ? active.id : runs[0].id;
    }
    renderRuns(runs);
    if (selectedRun !== null) {
      const base = `api/runs/${selectedRun}`;
      const [detail, errors, redirects, navigation, changes] = await Promise.all([
        api(base), api(`${base}/errors?limit=500`), api(`${base}/redirects?limit=50`),
        api(`${base}/navigation`), api(`${base}/changes`),
      ]);
      renderDetail(detail);
      renderErrors(errors);
      renderRedirects(redirects);
      renderNavigation(navigation);
      renderChanges(changes);
    }
    $("refreshed").textContent = `updated ${new Date().toLocaleTimeString()}`;
    $("refreshed").className = "muted";
  } catch (error) {
    $("refreshed").textContent = `refresh failed: ${error.message}`;
    $("refreshed").className = "error";
  }
}

const fromHash = /run=(\d+)/.exec(location.hash);
if (fromHash) selectedRun = Number(fromHash[1]);
for (const button of document.querySelectorAll("[data-action]")) {
  button.addEventListener("click", () => act(button.dataset.action));
}
refresh();
setInterval(refresh, REFRESH_MS);
