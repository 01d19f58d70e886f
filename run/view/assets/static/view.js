// The view works without this script; it only adds the run page's
// refresh, which shows what another process has committed since.
(function () {
  "use strict";
  var box = document.getElementById("live");
  var seconds = parseInt(document.body.dataset.refresh || "0", 10);
  if (!box || !(seconds > 0)) {
    return;
  }
  var key = "ac3-view-live";
  if (window.sessionStorage && sessionStorage.getItem(key) === "off") {
    box.checked = false;
  }
  box.addEventListener("change", function () {
    if (window.sessionStorage) {
      sessionStorage.setItem(key, box.checked ? "on" : "off");
    }
  });
  setInterval(function () {
    if (box.checked && document.visibilityState === "visible") {
      window.location.reload();
    }
  }, seconds * 1000);
})();
