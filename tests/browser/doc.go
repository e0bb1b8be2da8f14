// Package browser holds the tests that open zkchaos's pages in a real
// browser, Debian's headless Chromium (through internal/browser), as a
// reader would: the report.html of a real run and the index.html of a
// real `chaos test-all`. Each page must load with no console error or
// warning, no uncaught exception and no request off the machine; every
// link must resolve; the parts a reader looks for (the verdict, every
// figure) must be there and drawn; and a full-page screenshot of each
// kind is kept as results/browser/<kind>.png (results/ is gitignored, CI
// keeps it as an artifact).
//
// One real run serves the whole package: TestRealRun runs one cell of
// the matrix (the seed recipe through the exec: subject, unfenced, under
// pause-holder: double writes to show) with `chaos test-all`, which
// writes both the run's report and the index, and checks each page in a
// subtest. A page that lands later is one more subtest there: open it
// with openChecked (the load, console, links and screenshot checks), then
// its own checks. checkTimeline and checkStories are written for the
// report's timeline and stories and proven on hand-made pages
// (TestChecksOnHandMadePages); the report subtest calls them once the
// report has those sections.
//
// Chromium missing: the test fails, unless scripts/install-deps.sh (which
// make test runs first) wrote why it could not install it; then it skips
// saying so. docs/architecture.md ("Tests") has the measured times.
package browser
