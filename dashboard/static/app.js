// callon dashboard: the only script of ours. The page works without it;
// it draws the charts (uPlot) of content htmx loads, shows whether the
// live updates are connected, and reloads the page when the sign-in has
// expired. No inline script anywhere: the Content-Security-Policy
// allows scripts from this site's files only.
(function () {
  "use strict";

  function drawCharts(root) {
    root.querySelectorAll("[data-chart]").forEach(function (el) {
      if (el.dataset.drawn) return;
      var data;
      try { data = JSON.parse(el.dataset.chart); } catch (e) { return; }
      el.dataset.drawn = "1";
      var width = Math.max(el.clientWidth || 300, 240);
      new uPlot({
        title: el.dataset.title || "",
        width: width,
        height: 160,
        scales: { x: { time: false } },
        axes: [{ label: "hour (UTC)" }, { label: "tasks" }],
        series: [
          { label: "hour" },
          { label: "done", stroke: "#2e8b57", fill: "rgba(46,139,87,0.15)" },
          { label: "other outcomes", stroke: "#c0392b", fill: "rgba(192,57,43,0.12)" }
        ]
      }, data, el);
    });
  }

  function setLive(state) {
    var box = document.getElementById("live-status");
    if (!box) return;
    box.className = "live-status " + state;
    var text = box.querySelector(".live-text");
    if (text) text.textContent = state === "on" ? "live" : state === "off" ? "reconnecting…" : "live";
  }

  htmx.onLoad(drawCharts);
  document.body.addEventListener("htmx:sseOpen", function () { setLive("on"); });
  // A stream that ends and cannot come back may mean the sign-in expired
  // (the stream closes at expiry, and reconnecting is refused): ask, and
  // go back to the sign-in if so, rather than retrying for ever.
  var checking = false;
  document.body.addEventListener("htmx:sseError", function () {
    setLive("off");
    if (checking) return;
    checking = true;
    fetch(window.location.href, { method: "HEAD", credentials: "same-origin", cache: "no-store" })
      .then(function (r) { if (r.status === 401) window.location.reload(); })
      .catch(function () {})
      .then(function () { checking = false; });
  });
  document.body.addEventListener("htmx:responseError", function (e) {
    if (e.detail.xhr && e.detail.xhr.status === 401) window.location.reload();
  });
  document.body.addEventListener("htmx:afterSwap", function (e) {
    document.body.dataset.swaps = String(Number(document.body.dataset.swaps || "0") + 1);
  });
})();
