// Package dashboardtest tests workerpoolprom's Grafana dashboard
// (../dashboard.json) against the PromQL engine of Prometheus itself:
// pools run with workerpoolprom's collectors, and a natsfeed feed on an
// embedded NATS server with natsfeedprom's, a real HTTP scrape of them
// is loaded into a Prometheus test storage at two timestamps, and every
// query of the dashboard must parse and return at least one series.
//
// It is a module of its own because github.com/prometheus/prometheus is
// heavy: neither workerpool nor workerpoolprom depends on it. It has no
// code but its tests.
package dashboardtest
