package workerpoolprom

// InFlight returns the number of runs of the pool exported as pool that h
// holds as in flight, or -1 if h has seen no run of that pool.
func InFlight(h *Histograms, pool string) int {
	h.mu.Lock()
	runs, ok := h.pools[pool]
	h.mu.Unlock()
	if !ok {
		return -1
	}
	return runs.count()
}
