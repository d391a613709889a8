// The link graph page (graph.html): its filters, legend and the details of a selected memory.
"use strict";
const COLORS = MemoryGraph.COLORS;
const base = location.pathname.replace(/\/?$/, "/");
const db = new URLSearchParams(location.search).get("db");
const query = (extra) => "?" + new URLSearchParams({ ...(db ? { db } : {}), ...extra }).toString();
window.addEventListener("error", (event) => { document.body.dataset.errors = (document.body.dataset.errors || "") + event.message + "\n"; });

function fill(select, values) {
  for (const value of [...values].sort()) {
    const option = document.createElement("option");
    option.value = option.textContent = value;
    select.appendChild(option);
  }
}

async function fetchJson(url) {
  const response = await fetch(url);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

async function main() {
  const data = await fetchJson(base + "data.json" + query({}));
  const root = document.getElementById("graph");
  const drawn = MemoryGraph.draw(root, data, (id) => select(id));
  const byId = drawn.byId, circles = drawn.circles, edgeElements = drawn.edges;
  const legend = document.getElementById("legend");
  const claude = data.nodes.some((node) => node.kind === "claude") ? ["claude"] : [];  // when indexed (sources.py)
  for (const kind of ["session", "web", "minutes", "wiki", ...claude]) {
    const swatch = document.createElement("i");
    swatch.style.background = COLORS[kind];  // through the DOM: the policy allows no style attribute in markup
    const entry = document.createElement("span");
    entry.append(swatch, kind);
    legend.appendChild(entry);
  }
  const kinds = document.getElementById("kind"), projects = document.getElementById("project"), tags = document.getElementById("tag");
  fill(kinds, new Set(data.nodes.map((node) => node.kind)));
  fill(projects, new Set(data.nodes.map((node) => node.project).filter(Boolean)));
  fill(tags, new Set(data.nodes.flatMap((node) => node.tags)));
  const summary = document.getElementById("summary");
  function applyFilters() {
    const shown = new Set(data.nodes.filter((node) => (!kinds.value || node.kind === kinds.value)
      && (!projects.value || node.project === projects.value)
      && (!tags.value || node.tags.includes(tags.value))).map((node) => node.id));
    for (const [id, circle] of circles) circle.classList.toggle("hidden", !shown.has(id));
    drawn.labels.forEach((label) => label.classList.toggle("hidden", kinds.value || projects.value || tags.value));
    let links = 0;
    for (const [edge, line] of edgeElements) {
      const visible = shown.has(edge.source) && shown.has(edge.target);
      line.classList.toggle("hidden", !visible);
      links += visible;
    }
    summary.textContent = `${shown.size} memories, ${links} links shown · ${data.links.unresolved} unresolved link(s) in the index`;
  }
  [kinds, projects, tags].forEach((select) => select.addEventListener("change", applyFilters));
  applyFilters();

  async function select(id) {
    drawn.select(id);
    const node = byId.get(id), details = document.getElementById("details");
    details.innerHTML = "";
    const heading = document.createElement("h2"); heading.textContent = node.title;
    const path = document.createElement("div"); path.className = "path"; path.textContent = node.path;
    details.append(heading, path);
    try {
      const answer = await fetchJson(base + "related.json" + query({ path: id }));
      const list = document.createElement("ol");
      for (const item of answer.related) {
        const entry = document.createElement("li");
        entry.innerHTML = `<div></div><div class="reason"></div>`;
        entry.firstChild.textContent = item.title;
        entry.lastChild.textContent = item.reasons.join(", ") + " · " + item.kind;
        entry.addEventListener("click", () => byId.has(item.id) && select(item.id));
        list.appendChild(entry);
      }
      details.appendChild(list.children.length ? list : Object.assign(document.createElement("p"), { textContent: "nothing related" }));
    } catch (failure) {
      details.appendChild(Object.assign(document.createElement("p"), { textContent: "related: " + failure.message }));
    }
  }

  const preselected = new URLSearchParams(location.search).get("select");  // a deep link to one memory
  if (preselected && byId.has(preselected)) await select(preselected);
  document.body.dataset.nodes = String(data.nodes.length);
}

main().catch((failure) => {
  document.getElementById("canvas").innerHTML = "";
  const message = Object.assign(document.createElement("div"), { id: "message", textContent: "cannot draw the graph: " + failure.message });
  document.getElementById("canvas").appendChild(message);
  document.body.dataset.errors = (document.body.dataset.errors || "") + failure.message + "\n";
  console.error(failure);
});
