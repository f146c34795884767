package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/raftcat/raftcat/internal/testcluster"
)

// screenshotEnv names a file the browser test also writes its screenshot
// to; docs/status-page.png is made this way. The test then also runs a
// write load for a minute and a half first, so the charts have a shape.
const screenshotEnv = "RAFTCAT_UI_SCREENSHOT"

// The status page, loaded in headless Chromium from a follower, shows the
// three members with one leader, then the commits and the change of
// leader the test makes, and the tables by format.
func TestStatusPageInABrowser(t *testing.T) {
	ctx := browser(t)
	nodes, leader, follower := startCluster(t)
	navigate(t, ctx, follower.URL+"/ui/")
	waitPage(t, ctx, "three members, one of them leading", `rows().length === 3 && leaders().length === 1 &&
		document.getElementById("node-id").textContent === "`+follower.ID()+`"`)

	c := createTables(t, follower.URL)
	c.commitAll(t, follower.URL)
	other := testcluster.Followers(nodes, leader)[1] // not the node the page is loaded from
	transferLeadership(t, leader, other)
	c.commitAll(t, follower.URL)
	if os.Getenv(screenshotEnv) != "" {
		load(t, c, follower.URL)
	}

	waitPage(t, ctx, "the commits on the throughput chart", `Number(chart("commands").max) > 0 && Number(chart("p99").max) > 0`)
	waitPage(t, ctx, "the new leader", `leaders().length === 1 && leaders()[0].dataset.member === "`+other.ID()+`" &&
		document.querySelector("#leader-changes tbody tr").dataset.leader === "`+other.ID()+`"`)
	for format, n := range c.byFormat {
		waitPage(t, ctx, "the "+format+" tables", fmt.Sprintf(`document.querySelector('#formats [data-format=%q]')?.dataset.count === "%d"`, format, n))
	}
	screenshot(t, ctx)
}

// pageHelpers are the functions the predicates below use.
const pageHelpers = `const rows = () => [...document.querySelectorAll("#members tbody tr[data-member]")];
	const leaders = () => rows().filter((r) => r.dataset.role === "leader");
	const chart = (name) => document.querySelector("#chart-" + name + " svg")?.dataset ?? {};`

// waitPage polls the page's DOM until the JavaScript predicate holds.
func waitPage(t *testing.T, ctx context.Context, what, predicate string) {
	t.Helper()
	fn := "() => { " + pageHelpers + "\nreturn " + predicate + "; }"
	_, err := chromedp.Run(ctx, chromedp.PollFunction[bool](fn, chromedp.WithPollingInterval(50*time.Millisecond),
		chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("waiting for %s: %v\npage:\n%s", what, err, text)
	}
}

// browser starts headless Chromium for the test. A missing Chromium fails
// the test: Debian's chromium package provides it.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Fatal("no Chromium found (chromium, chromium-browser or google-chrome on PATH); install Debian's chromium package")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Headless, chromedp.WindowSize(1440, 1000), chromedp.Flag("disable-gpu", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return ctx
}

func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	return ""
}

func navigate(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("load %s: %v", url, err)
	}
}

// screenshot saves the whole page under the test's artifact directory,
// and to $RAFTCAT_UI_SCREENSHOT if set.
func screenshot(t *testing.T, ctx context.Context) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	paths := []string{filepath.Join(t.ArtifactDir(), "status-page.png")}
	if extra := os.Getenv(screenshotEnv); extra != "" {
		paths = append(paths, extra)
	}
	for _, p := range paths {
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatalf("save screenshot: %v", err)
		}
		t.Logf("screenshot saved to %s", p)
	}
}

// load writes through the node at base for a while, with one to three
// writers at a time, so the charts of a screenshot have some shape.
func load(t *testing.T, c *catalog, base string) {
	t.Helper()
	tables := []string{"orders", "customers", "payments"}
	for _, writers := range []int{1, 2, 3, 2, 1, 3, 3, 1, 2, 1, 2, 3, 1} {
		var wg sync.WaitGroup
		end := time.Now().Add(8 * time.Second)
		for _, name := range tables[:writers] {
			wg.Go(func() {
				for time.Now().Before(end) {
					if err := c.tryCommit(base, name); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
}

// With --auth=token the page asks for nothing it is given in its
// fragment: loaded as /ui/#token=..., it shows the cluster, and the token
// is gone from the address bar.
func TestStatusPageWithAuthInABrowser(t *testing.T) {
	ctx := browser(t)
	const admin = "ui-admin-token-0123456789abcdef"
	nodes := testcluster.Start(t, 3, testcluster.Options{AdminToken: admin})
	follower := testcluster.Followers(nodes, testcluster.Leader(t, nodes))[0]
	r := testcluster.Do(t, http.MethodGet, follower.URL+"/ui/api/overview", nil)
	if r.Status != http.StatusUnauthorized {
		t.Fatalf("the overview without a token: %d %s", r.Status, r.Raw)
	}
	navigate(t, ctx, follower.URL+"/ui/#token="+admin)
	waitPage(t, ctx, "three members with the token", `rows().length === 3 && leaders().length === 1 && location.hash === ""`)
}
