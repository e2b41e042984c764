// Command crawler crawls a web site on a worker pool: each page is a task
// of one Group, which fetches the page and adds a task for each new link
// it finds; Group.Wait returns once the whole site has been crawled.
// SetLimit caps the fetches in flight for the site, whatever the pool's
// size, so that the crawler is polite to the server while the pool's other
// workers stay free for other work.
//
// By default it crawls a site it serves itself, on a local port, so it
// runs offline and ends the same way every time:
//
//	go run ./examples/crawler
//
//	crawled 120 pages, 12 broken links, at most 4 fetches at once (limit 4), on a pool of 8 workers
//
// A 404 is a broken link, counted and reported; a page that cannot be
// fetched at all (the server is down) is an error that cancels the crawl:
// the group's context ends, the queued fetches are skipped, and Wait
// returns the first error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/e86d9661/workerpool"
)

func main() {
	pages := flag.Int("pages", 120, "pages of the built-in site")
	limit := flag.Int("limit", 4, "fetches in flight at most (Group.SetLimit)")
	workers := flag.Int("workers", 8, "the pool's size")
	delay := flag.Duration("delay", 2*time.Millisecond, "the built-in site's time to serve a page")
	flag.Parse()

	site := httptest.NewServer(newSite(*pages, *delay))
	defer site.Close()
	pool := workerpool.New(*workers)
	defer pool.StopWait()

	r, err := crawl(context.Background(), pool, *limit, site.URL+"/")
	if err != nil {
		fmt.Fprintln(os.Stderr, "crawler:", err)
		os.Exit(1)
	}
	fmt.Printf("crawled %d pages, %d broken links, at most %d fetches at once (limit %d), on a pool of %d workers\n",
		r.pages, len(r.broken), r.most, *limit, *workers)
	for _, b := range r.broken[:min(3, len(r.broken))] {
		fmt.Println("broken:", b)
	}
}

// A report is what a crawl found.
type report struct {
	pages  int      // pages fetched
	broken []string // links that answered 404, as "page -> link" (paths), sorted
	most   int      // fetches in flight at once, at most
}

// crawler is the state the crawl's tasks share, under mu.
type crawler struct {
	client *http.Client
	host   string // only links to this host are followed

	mu       sync.Mutex
	seen     map[string]bool
	inFlight int
	report
}

// crawl fetches start and every page of its host it links to, at most
// limit at a time, on pool. It returns once every page has been fetched,
// or with the first error, which cancels the crawl.
func crawl(ctx context.Context, pool *workerpool.WorkerPool, limit int, start string) (report, error) {
	u, err := url.Parse(start)
	if err != nil {
		return report{}, err
	}
	c := &crawler{client: &http.Client{Timeout: 30 * time.Second}, host: u.Host, seen: map[string]bool{start: true}}
	g := pool.Group(ctx)
	g.SetLimit(limit)
	g.Go(func(ctx context.Context) error { return c.visit(ctx, g, "", start) })
	err = g.Wait()
	slices.Sort(c.broken)
	return c.report, err
}

// href finds the links of a page; enough for the pages of this example.
var href = regexp.MustCompile(`href="([^"]*)"`)

// visit fetches page (linked from from) and queues, in g, a visit of each
// link on it not seen before.
func (c *crawler) visit(ctx context.Context, g *workerpool.Group, from, page string) error {
	c.mu.Lock()
	c.inFlight++
	c.most = max(c.most, c.inFlight)
	c.mu.Unlock()
	body, status, err := c.fetch(ctx, page)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight--
	switch {
	case err != nil:
		return fmt.Errorf("fetch %s: %w", page, err)
	case status == http.StatusNotFound:
		c.broken = append(c.broken, pathOf(from)+" -> "+pathOf(page))
		return nil
	case status != http.StatusOK:
		return fmt.Errorf("fetch %s: status %d", page, status)
	}
	c.pages++
	base, _ := url.Parse(page)
	for _, m := range href.FindAllStringSubmatch(body, -1) {
		link, err := base.Parse(m[1])
		if err != nil || link.Host != c.host {
			continue // a malformed link, or another site's
		}
		link.Fragment = ""
		next := link.String()
		if !c.seen[next] {
			c.seen[next] = true
			g.Go(func(ctx context.Context) error { return c.visit(ctx, g, page, next) })
		}
	}
	return nil
}

// pathOf returns the path of the URL u, or u if it has none.
func pathOf(u string) string {
	if p, err := url.Parse(u); err == nil && p.Path != "" {
		return p.Path
	}
	return u
}

// fetch GETs page and returns its body (the first MiB) and status.
func (c *crawler) fetch(ctx context.Context, page string) (string, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, page, nil)
	if err != nil {
		return "", 0, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil && !errors.Is(err, io.EOF) {
		return "", 0, err
	}
	return string(b), resp.StatusCode, nil
}

// newSite serves pages /, /p/1 … /p/n-1: page i links to pages 2i+1 and
// 2i+2 (a tree), back to /, and every tenth page to a page that does not
// exist. Each answer takes delay, as a real server's would.
func newSite(n int, delay time.Duration) http.Handler {
	page := func(i int) string {
		if i == 0 {
			return "/"
		}
		return fmt.Sprintf("/p/%d", i)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		i := -1
		if r.URL.Path == "/" {
			i = 0
		} else if _, err := fmt.Sscanf(r.URL.Path, "/p/%d", &i); err != nil || page(i) != r.URL.Path || i >= n {
			http.NotFound(w, r)
			return
		}
		var b strings.Builder
		fmt.Fprintf(&b, "<html><body><h1>page %d</h1>\n<a href=\"/\">home</a>\n", i)
		for _, child := range []int{2*i + 1, 2*i + 2} {
			if child < n {
				fmt.Fprintf(&b, "<a href=\"%s\">page %d</a>\n", page(child), child)
			}
		}
		if i%10 == 0 {
			fmt.Fprintf(&b, "<a href=\"/gone/%d\">an old page</a>\n", i)
		}
		b.WriteString("<a href=\"https://example.com/\">elsewhere</a>\n</body></html>\n")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, b.String())
	})
}
