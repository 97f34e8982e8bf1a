// Live updates for the gpufleet dashboard: the server sends each changed
// fragment of the page (rendered by the server) over Server-Sent Events;
// this script swaps it in and draws the node timelines and countdowns.
(function () {
  "use strict";
  var live = document.getElementById("live");
  var seq = document.body.dataset.seq;
  var es = new EventSource("/events?since=" + seq);
  es.addEventListener("fragment", function (e) {
    var m = JSON.parse(e.data);
    var el = document.getElementById(m.id);
    if (!el) { location.reload(); return; }
    el.outerHTML = m.html;
    draw();
  });
  es.addEventListener("reload", function () { location.reload(); });
  es.onopen = function () { live.textContent = "live"; live.className = "live on"; };
  es.onerror = function () { live.textContent = "disconnected: retrying"; live.className = "live off"; };

  function human(ms) {
    var s = Math.max(0, Math.round(ms / 1000));
    var d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
    if (d) return d + "d " + h + "h";
    if (h) return h + "h " + m + "m";
    if (m) return m + "m " + (s % 60) + "s";
    return s + "s";
  }

  // Each cluster's timelines share one scale: from its earliest phase
  // start to now. A timeline comes as data-h="Phase:startMs[:f] ...".
  function segments(tl) {
    if (!tl._segs) {
      tl._segs = (tl.dataset.h || "").split(" ").filter(Boolean).map(function (x) {
        var p = x.split(":");
        var s = document.createElement("span");
        s.className = "seg ph-" + p[0].toLowerCase() + (p[2] ? " failed" : "");
        s.title = p[0] + " from " + new Date(Number(p[1])).toISOString();
        tl.appendChild(s);
        return { el: s, start: Number(p[1]) };
      });
    }
    return tl._segs;
  }
  function draw() {
    var now = Date.now();
    document.querySelectorAll(".countdown").forEach(function (c) {
      c.textContent = human(Number(c.dataset.at) - now);
    });
    // Only open timelines are drawn: a fleet of 200 clusters of 100 nodes
    // has 20,000, most of them in completed rollouts, folded.
    document.querySelectorAll("details[open] > .nodes").forEach(function (box) {
      var tls = box.querySelectorAll(".timeline");
      var t0 = now;
      tls.forEach(function (tl) { segments(tl).forEach(function (s) { t0 = Math.min(t0, s.start); }); });
      var span = Math.max(now - t0, 1000);
      tls.forEach(function (tl) {
        var ss = segments(tl);
        ss.forEach(function (s, i) {
          var b = i + 1 < ss.length ? ss[i + 1].start : now;
          s.el.style.left = (100 * (s.start - t0) / span) + "%";
          s.el.style.width = Math.max(0.5, 100 * (b - s.start) / span) + "%";
        });
      });
    });
  }
  document.addEventListener("toggle", draw, true);
  draw();
  setInterval(draw, 1000);
})();
