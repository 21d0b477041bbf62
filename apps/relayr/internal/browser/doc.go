// Package browser holds the operator page's end-to-end tests: headless
// Chromium (Debian's chromium package, driven by chromedp) against a
// running relayr built as the demo builds it (the Plane emulation, a SQLite
// ledger, a subscriber on loopback), on a fake clock the tests drive.
//
// The tests skip when no chromium is installed, and fail instead under
// RELAYR_REQUIRE_BROWSER=1, which CI sets. With RELAYR_UI_SCREENSHOTS set to
// a folder they save the page's screenshots there, at a laptop's width and
// a phone's (make screenshots writes docs/ui/).
package browser
