// Package consoletest drives the web console of "karman serve" in
// headless Chromium (through github.com/chromedp/chromedp) against a
// server carrying real RocketMQ client traffic. It has tests only; they
// need the chromium browser (Debian package chromium) and write a
// screenshot of each page into the test's artifact directory (go test
// -artifacts -outputdir DIR keeps them).
package consoletest
