package main

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/e86d9661/workerpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The built-in site: every page once, every broken link, never more
// fetches at once than the limit.
func TestCrawlFindsEveryPage(t *testing.T) {
	site := httptest.NewServer(newSite(50, 0))
	defer site.Close()
	pool := workerpool.New(8)
	defer pool.StopWait()

	r, err := crawl(context.Background(), pool, 3, site.URL+"/")
	require.NoError(t, err)
	assert.Equal(t, 50, r.pages, "pages")
	assert.Equal(t, []string{"/ -> /gone/0", "/p/10 -> /gone/10", "/p/20 -> /gone/20", "/p/30 -> /gone/30", "/p/40 -> /gone/40"}, r.broken)
	assert.LessOrEqual(t, r.most, 3, "fetches at once")
	assert.Positive(t, r.most)
}

// A site that cannot be reached is an error, and the crawl ends.
func TestCrawlEndsOnAnError(t *testing.T) {
	site := httptest.NewServer(newSite(10, 0))
	site.Close() // nothing listens there now
	pool := workerpool.New(2)
	defer pool.StopWait()

	r, err := crawl(context.Background(), pool, 2, site.URL+"/")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fetch "+site.URL+"/")
	assert.Zero(t, r.pages)
}
