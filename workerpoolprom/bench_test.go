package workerpoolprom_test

import (
	"sync"
	"testing"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/workerpoolprom"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkCollect measures one scrape of each collector: Collect into a
// channel, as a registry does, and a registry's whole Gather of both (the
// metrics written out as protobuf messages, not yet encoded).
func BenchmarkCollect(b *testing.B) {
	h := workerpoolprom.NewHistograms("bench")
	p := workerpool.New(4, workerpool.WithName("bench"), workerpool.WithHooks(h.Hooks()))
	defer p.StopWait()
	for range 1000 {
		p.Submit(func() {})
	}
	b.Run("collector=status", func(b *testing.B) {
		benchmarkCollect(b, workerpoolprom.NewCollector(p))
	})
	b.Run("collector=histograms", func(b *testing.B) {
		benchmarkCollect(b, h)
	})
	b.Run("gather=both", func(b *testing.B) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(workerpoolprom.NewCollector(p), h)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reg.Gather(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchmarkCollect(b *testing.B, c prometheus.Collector) {
	ch := make(chan prometheus.Metric, 16)
	b.ReportAllocs()
	for b.Loop() {
		c.Collect(ch)
		for len(ch) > 0 {
			<-ch
		}
	}
}

// BenchmarkSubmit measures the per-task cost of the histograms' hooks:
// no-op tasks on 4 workers, without hooks and with them.
func BenchmarkSubmit(b *testing.B) {
	b.Run("hooks=none", func(b *testing.B) {
		benchmarkSubmit(b, workerpool.New(4))
	})
	b.Run("hooks=histograms", func(b *testing.B) {
		h := workerpoolprom.NewHistograms("bench")
		benchmarkSubmit(b, workerpool.New(4, workerpool.WithName("bench"), workerpool.WithHooks(h.Hooks())))
	})
}

func benchmarkSubmit(b *testing.B, p *workerpool.WorkerPool) {
	wg := new(sync.WaitGroup)
	defer p.StopWait()
	b.ReportAllocs()
	for b.Loop() {
		wg.Add(1)
		p.Submit(wg.Done)
	}
	wg.Wait()
}
