// The link graph of the memories, laid out and drawn as SVG: used by /graph and by the knowledge-base page.
// MemoryGraph.draw(svg, data, onSelect) draws /graph/data.json's nodes and edges into an <svg> element.
"use strict";
(function () {
  const COLORS = { session: "#4e79a7", web: "#59a14f", minutes: "#f28e2b", wiki: "#e15759", claude: "#b07aa1", other: "#9c9c9c" };
  const SVG_NS = "http://www.w3.org/2000/svg";

  function svg(name, attributes, parent) {
    const element = document.createElementNS(SVG_NS, name);
    for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
    if (parent) parent.appendChild(element);
    return element;
  }

  // A force layout: springs along links, repulsion between nearby nodes (a grid keeps it linear),
  // and a pull of each kind toward its own quarter, so unlinked memories still group by kind.
  function layout(nodes, edges, width, height) {
    const anchors = { session: [0.28, 0.3], web: [0.72, 0.3], minutes: [0.72, 0.72], wiki: [0.3, 0.7], claude: [0.5, 0.88], other: [0.5, 0.5] };
    const index = new Map(nodes.map((node, i) => [node.id, i]));
    const area = width * height, ideal = Math.max(18, Math.min(90, Math.sqrt(area / Math.max(nodes.length, 1)) * 0.7));
    nodes.forEach((node, i) => {  // deterministic start: a golden-angle spiral around the kind's anchor
      const [ax, ay] = anchors[node.kind] || anchors.other, angle = i * 2.39996, radius = ideal * Math.sqrt(i % 97 + 1) * 0.6;
      node.x = ax * width + Math.cos(angle) * radius; node.y = ay * height + Math.sin(angle) * radius; node.vx = 0; node.vy = 0;
    });
    const springs = edges.map((edge) => [index.get(edge.source), index.get(edge.target)]);
    const iterations = nodes.length > 5000 ? 60 : 220;
    for (let step = 0; step < iterations; step++) {
      const heat = 1 - step / iterations, cell = ideal * 2, grid = new Map();
      nodes.forEach((node, i) => {
        const key = Math.floor(node.x / cell) + "," + Math.floor(node.y / cell);
        (grid.get(key) || grid.set(key, []).get(key)).push(i);
      });
      nodes.forEach((node, i) => {
        const gx = Math.floor(node.x / cell), gy = Math.floor(node.y / cell);
        for (let dx = -1; dx <= 1; dx++) for (let dy = -1; dy <= 1; dy++) {
          for (const j of grid.get((gx + dx) + "," + (gy + dy)) || []) {
            if (j <= i) continue;
            const other = nodes[j];
            let ox = node.x - other.x, oy = node.y - other.y, distance = Math.hypot(ox, oy);
            if (distance < 0.01) { ox = (i - j) % 7 + 0.5; oy = (j - i) % 5 + 0.5; distance = Math.hypot(ox, oy); }
            if (distance > cell) continue;
            const push = Math.min((ideal * ideal) / distance / distance * 0.8, ideal);
            node.vx += ox / distance * push; node.vy += oy / distance * push;
            other.vx -= ox / distance * push; other.vy -= oy / distance * push;
          }
        }
      });
      for (const [a, b] of springs) {
        const one = nodes[a], two = nodes[b], ox = two.x - one.x, oy = two.y - one.y;
        const distance = Math.max(Math.hypot(ox, oy), 0.01), pull = (distance - ideal * 2) / distance * 0.06;
        one.vx += ox * pull; one.vy += oy * pull; two.vx -= ox * pull; two.vy -= oy * pull;
      }
      for (const node of nodes) {
        const [ax, ay] = anchors[node.kind] || anchors.other;
        node.vx += (ax * width - node.x) * 0.012; node.vy += (ay * height - node.y) * 0.012;
        const speed = Math.hypot(node.vx, node.vy), limit = ideal * heat + 0.5;
        const scale = speed > limit ? limit / speed : 1;
        node.x += node.vx * scale; node.y += node.vy * scale; node.vx *= 0.5; node.vy *= 0.5;
      }
    }
  }

  // Lays the graph out in the svg's box and draws it; a click on a node calls onSelect(id). Returns
  // { circles, edges, labels, select(id) } for filters and selection; scroll zooms, dragging pans.
  function draw(root, data, onSelect) {
    const box = root.getBoundingClientRect();
    const width = Math.max(box.width, 400), height = Math.max(box.height, 300);
    layout(data.nodes, data.edges, width, height);
    const margin = 40, xs = data.nodes.map((node) => node.x), ys = data.nodes.map((node) => node.y);
    const view = xs.length ? { x: Math.min(...xs) - margin, y: Math.min(...ys) - margin,
      w: Math.max(...xs) - Math.min(...xs) + 2 * margin + 160, h: Math.max(...ys) - Math.min(...ys) + 2 * margin }
      : { x: 0, y: 0, w: width, h: height };
    const setView = () => root.setAttribute("viewBox", `${view.x} ${view.y} ${view.w} ${view.h}`);
    setView();
    const scene = svg("g", {}, root), edgeLayer = svg("g", {}, scene), nodeLayer = svg("g", {}, scene);
    const byId = new Map(data.nodes.map((node) => [node.id, node]));
    const edges = data.edges.map((edge) => {
      const one = byId.get(edge.source), two = byId.get(edge.target);
      return [edge, svg("line", { class: "edge " + edge.kind, x1: one.x, y1: one.y, x2: two.x, y2: two.y }, edgeLayer)];
    });
    const circles = new Map(), labels = [];
    for (const node of data.nodes) {
      const circle = svg("circle", { class: "node" + (["superseded", "deprecated"].includes(node.status) ? " inactive" : ""),
        cx: node.x, cy: node.y, r: 5 + 2.5 * Math.sqrt(node.degree), fill: COLORS[node.kind] || COLORS.other,
        "data-id": node.id, "data-kind": node.kind }, nodeLayer);
      svg("title", {}, circle).textContent = node.title + "\n" + node.path;
      circle.addEventListener("click", () => onSelect(node.id));
      circles.set(node.id, circle);
      if (node.degree >= 2) {
        const label = svg("text", { class: "label", x: node.x + 8, y: node.y + 4 }, nodeLayer);
        label.textContent = node.title.length > 28 ? node.title.slice(0, 27) + "…" : node.title;
        labels.push(label);
      }
    }
    let drag = null;  // pan and zoom
    root.addEventListener("mousedown", (event) => { drag = [event.clientX, event.clientY, view.x, view.y]; });
    window.addEventListener("mouseup", () => { drag = null; });
    window.addEventListener("mousemove", (event) => {
      if (!drag) return;
      const scale = view.w / root.getBoundingClientRect().width;
      view.x = drag[2] - (event.clientX - drag[0]) * scale; view.y = drag[3] - (event.clientY - drag[1]) * scale; setView();
    });
    root.addEventListener("wheel", (event) => {
      event.preventDefault();
      const factor = event.deltaY > 0 ? 1.15 : 1 / 1.15, rect = root.getBoundingClientRect();
      const px = view.x + (event.clientX - rect.left) / rect.width * view.w, py = view.y + (event.clientY - rect.top) / rect.height * view.h;
      view.w *= factor; view.h *= factor; view.x = px - (px - view.x) * factor; view.y = py - (py - view.y) * factor; setView();
    }, { passive: false });
    return {
      circles, edges, labels, byId,
      select(id) { circles.forEach((circle, key) => circle.classList.toggle("selected", key === id)); },
    };
  }

  window.MemoryGraph = { COLORS, layout, draw };
})();
