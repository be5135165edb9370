package broker_test

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/sharebroker/sharebroker/broker"
)

// dashboardPath is the Grafana dashboard the README points to.
const dashboardPath = "../deploy/grafana/sharebroker.json"

// grafanaDashboard is the part of Grafana's dashboard JSON model the test
// reads; unknown fields are ignored, as Grafana ignores what it does not
// know.
type grafanaDashboard struct {
	Title         string         `json:"title"`
	UID           string         `json:"uid"`
	SchemaVersion int            `json:"schemaVersion"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"` // a string, or {"query": ...} for query variables
		} `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	ID         int                 `json:"id"`
	Type       string              `json:"type"`
	Title      string              `json:"title"`
	Datasource *grafanaDatasource  `json:"datasource"`
	GridPos    *struct{ H, W int } `json:"gridPos"`
	Targets    []struct {
		RefID      string             `json:"refId"`
		Expr       string             `json:"expr"`
		Datasource *grafanaDatasource `json:"datasource"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a collapsed row's
}

type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// brokerMetric matches a metric name of the broker in a PromQL expression:
// the dashboard reads only the broker's own metrics.
var brokerMetric = regexp.MustCompile(`\bsharebroker_[a-zA-Z0-9_]+`)

// selector matches an identifier directly followed by a label matcher or
// a range: a metric name, whoever's it is.
var selector = regexp.MustCompile(`\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*[{\[]`)

// The dashboard is valid Grafana JSON over a Prometheus data source
// variable, and every metric its queries name is one the broker serves,
// as gathered after share traffic made every family exist.
func TestGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 30 {
		t.Errorf("title %q, uid %q, schemaVersion %d: want all set, schema 30 or later", d.Title, d.UID, d.SchemaVersion)
	}

	// The data source is a variable, so the dashboard imports into any
	// Grafana with a Prometheus scraping the broker.
	var exprs []string
	hasDatasourceVar := false
	for _, v := range d.Templating.List {
		var q string
		if json.Unmarshal(v.Query, &q) != nil {
			var obj struct{ Query string }
			if err := json.Unmarshal(v.Query, &obj); err != nil {
				t.Errorf("variable %s: query %s is neither a string nor an object", v.Name, v.Query)
			}
			q = obj.Query
		}
		switch v.Type {
		case "datasource":
			hasDatasourceVar = hasDatasourceVar || (v.Name == "datasource" && q == "prometheus")
		case "query":
			exprs = append(exprs, q)
		}
	}
	if !hasDatasourceVar {
		t.Error("no Prometheus data source variable named datasource")
	}

	ids := map[int]bool{}
	var walk func([]grafanaPanel)
	walk = func(panels []grafanaPanel) {
		for _, p := range panels {
			if ids[p.ID] {
				t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
			}
			ids[p.ID] = true
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if p.Title == "" || p.Type == "" || p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 {
				t.Errorf("panel %d %q: needs a title, a type and a grid position", p.ID, p.Title)
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: data source %+v, want the ${datasource} variable", p.Title, p.Datasource)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no queries", p.Title)
			}
			for _, q := range p.Targets {
				if q.RefID == "" || strings.TrimSpace(q.Expr) == "" {
					t.Errorf("panel %q: a query without refId or expression", p.Title)
				}
				if q.Datasource != nil && q.Datasource.UID != "${datasource}" {
					t.Errorf("panel %q query %s: data source %+v", p.Title, q.RefID, q.Datasource)
				}
				exprs = append(exprs, q.Expr)
			}
		}
	}
	walk(d.Panels)
	if len(ids) == 0 {
		t.Fatal("no panels")
	}

	served := servedMetricNames(t)
	for _, expr := range exprs {
		names := brokerMetric.FindAllString(expr, -1)
		if len(names) == 0 {
			t.Errorf("query %q names no sharebroker metric", expr)
		}
		for _, m := range selector.FindAllStringSubmatch(expr, -1) {
			if !strings.HasPrefix(m[1], "sharebroker_") {
				t.Errorf("query %q selects %s, not a metric of the broker", expr, m[1])
			}
		}
		for _, name := range names {
			if !served[name] {
				t.Errorf("query %q names %s, which the broker does not serve", expr, name)
			}
		}
	}
}

// servedMetricNames drives share traffic through a broker — a fetch that
// acquires, an acknowledgement, a renewal and an expiry — then returns
// every name its /metrics serves, with each histogram's series names.
func servedMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	e, base := newHTTPShareEnv(t, broker.Config{})
	e.produce("r0", "r1")
	m := e.raw()
	m.join("m", semTopic)
	if p := partitionOf(t, m.fetch(2, "m", 0, nil, nil)); len(p.AcquiredRecords) != 1 {
		t.Fatalf("acquired %+v", p.AcquiredRecords)
	}
	wantCode(t, "accept r0, renew r1", m.ack(2, "m", 1, true, []ackSpec{{0, 0, []int8{1}}, {1, 1, []int8{4}}}).Topics[0].Partitions[0].ErrorCode, nil)
	e.clock.Advance(semLock)
	names := map[string]bool{}
	for name, f := range scrape(t, base) {
		names[name] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				names[name+suffix] = true
			}
		}
	}
	for _, want := range []string{"sharebroker_share_fetch_requests_total", "sharebroker_share_records_in_flight"} {
		if !names[want] {
			t.Fatalf("the traffic did not make %s (served: %v)", want, slices.Sorted(maps.Keys(names)))
		}
	}
	return names
}
