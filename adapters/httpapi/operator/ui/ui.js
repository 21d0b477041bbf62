// relayr's operator page: refresh the sections in place, every
// data-refresh milliseconds, from the fragment the server renders, so the
// page keeps its scroll and its filter and nothing reloads. Without
// script the page is whole as served; reloading it shows what is new.
(function () {
	"use strict";
	var main = document.getElementById("sections");
	if (!main) {
		return;
	}
	var every = parseInt(document.body.getAttribute("data-refresh"), 10) || 5000;
	function schedule() {
		window.setTimeout(tick, every);
	}
	function tick() {
		var active = document.activeElement;
		if (document.hidden || (active && active !== document.body && main.contains(active))) {
			// Hidden, or a person is on one of the sections' buttons.
			schedule();
			return;
		}
		fetch(main.getAttribute("data-fragment"), { credentials: "same-origin", cache: "no-store", headers: { "Accept": "text/html" } })
			.then(function (res) {
				if (res.status === 401) {
					// The sign-in ended: show the sign-in page.
					window.location.reload();
					return null;
				}
				return res.ok ? res.text() : null;
			})
			.then(function (html) {
				if (html !== null) {
					main.innerHTML = html;
					document.body.setAttribute("data-refreshed", String(Date.now()));
				}
			})
			.catch(function () { /* the next tick tries again */ })
			.then(schedule);
	}
	schedule();
})();
