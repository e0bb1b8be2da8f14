// Package browser holds the tests that open zkchaos's pages in a real
// browser, Debian's headless Chromium (through internal/testkit/browser), as a
// reader would: the report.html of real runs, the index of a real `chaos
// test-all`, the page `chaos compare` writes, and `chaos serve` over
// loopback HTTP. Each page must load with no console error or warning, no
// uncaught exception and no request off the machine; every link must
// resolve (a link to #id of another page opens that page for its ids);
// the parts a reader looks for must be there and drawn; and a full-page
// screenshot of each kind is kept as results/browser/<kind>.png
// (report-valid, report-invalid, index, compare, serve; results/ is
// gitignored, CI keeps it as an artifact).
//
// One `chaos test-all` of two cells serves the whole package, so the real
// runs happen once: TestRealRuns runs the seed recipe through the exec:
// subject under pause-holder, fenced and unfenced, and checks in
// subtests each report (the verdict of results.json, every figure, the
// timeline with a mark for every double-writer violation and the
// stories telling them, the rejected writes of the fenced run), the
// index (links to both reports), the compare page of the pair (both
// verdicts, both timelines, links to both reports and to every story of
// the unfenced one), and `chaos serve` on the results folder (both runs
// listed, the verdict filter, the compare form's page, a report served,
// an encoded ".." refused, SIGINT exits 0). Every check is first proven
// able to fail on hand-made pages (TestChecksOnHandMadePages).
//
// Chromium missing: the test fails, unless scripts/install-deps.sh (which
// make test runs first) wrote why it could not install it; then it skips
// saying so. docs/architecture.md ("Tests") has the measured times.
package browser
