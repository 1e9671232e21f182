// Command promscrape scrapes a Prometheus text endpoint the way a Prometheus server would, then
// checks it with Prometheus's own libraries: promlint (what `promtool check metrics` runs) and
// expfmt's text parser (what the server's scrape runs). It prints one JSON document on stdout:
// the answer's status and content type, the lint problems, and every family with its samples,
// for a test to assert on (tests/int/observability/metrics.spec.ts). Exit 0 once that is printed,
// whatever it says; 2 when the endpoint could not be reached or parsed.
//
//	promscrape [-token-env NAME] URL
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

type problem struct {
	Metric string `json:"metric"`
	Text   string `json:"text"`
}

type bucket struct {
	Le    float64 `json:"le"`
	Count uint64  `json:"count"`
}

type sample struct {
	Labels  map[string]string `json:"labels"`
	Value   *float64          `json:"value,omitempty"`
	Count   *uint64           `json:"count,omitempty"`
	Sum     *float64          `json:"sum,omitempty"`
	Buckets []bucket          `json:"buckets,omitempty"`
}

type family struct {
	Type    string   `json:"type"`
	Help    string   `json:"help"`
	Samples []sample `json:"samples"`
}

type report struct {
	Status      int               `json:"status"`
	ContentType string            `json:"contentType"`
	Body        string            `json:"body,omitempty"`
	Problems    []problem         `json:"problems"`
	Families    map[string]family `json:"families"`
}

// JSON has no infinity: +Inf buckets are written as the largest float
func finite(v float64) float64 {
	if math.IsInf(v, 1) {
		return math.MaxFloat64
	}
	if math.IsInf(v, -1) {
		return -math.MaxFloat64
	}
	if math.IsNaN(v) {
		return 0
	}
	return v
}

func main() {
	tokenEnv := flag.String("token-env", "", "the environment variable holding the bearer token (none: no Authorization)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: promscrape [-token-env NAME] URL")
		os.Exit(2)
	}
	req, err := http.NewRequest(http.MethodGet, flag.Arg(0), nil)
	if err != nil {
		fail(err)
	}
	// what a Prometheus server asks for (text format 0.0.4 accepted)
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
	if *tokenEnv != "" {
		req.Header.Set("Authorization", "Bearer "+os.Getenv(*tokenEnv))
	}
	res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		fail(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		fail(err)
	}
	out := report{Status: res.StatusCode, ContentType: res.Header.Get("Content-Type"), Problems: []problem{}, Families: map[string]family{}}
	if res.StatusCode != http.StatusOK {
		out.Body = string(body)
		emit(out)
		return
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		fail(fmt.Errorf("lint: %w", err))
	}
	for _, p := range problems {
		out.Problems = append(out.Problems, problem{Metric: p.Metric, Text: p.Text})
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		fail(fmt.Errorf("parse: %w", err))
	}
	for name, mf := range families {
		f := family{Type: mf.GetType().String(), Help: mf.GetHelp(), Samples: []sample{}}
		for _, m := range mf.GetMetric() {
			s := sample{Labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.Labels[l.GetName()] = l.GetValue()
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				v := finite(m.GetCounter().GetValue())
				s.Value = &v
			case dto.MetricType_GAUGE:
				v := finite(m.GetGauge().GetValue())
				s.Value = &v
			case dto.MetricType_UNTYPED:
				v := finite(m.GetUntyped().GetValue())
				s.Value = &v
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				c, sum := h.GetSampleCount(), finite(h.GetSampleSum())
				s.Count, s.Sum = &c, &sum
				for _, b := range h.GetBucket() {
					s.Buckets = append(s.Buckets, bucket{Le: finite(b.GetUpperBound()), Count: b.GetCumulativeCount()})
				}
			case dto.MetricType_SUMMARY:
				c, sum := m.GetSummary().GetSampleCount(), finite(m.GetSummary().GetSampleSum())
				s.Count, s.Sum = &c, &sum
			}
			f.Samples = append(f.Samples, s)
		}
		out.Families[name] = f
	}
	sort.Slice(out.Problems, func(i, j int) bool { return out.Problems[i].Metric < out.Problems[j].Metric })
	emit(out)
}

func emit(r report) {
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "promscrape:", err)
	os.Exit(2)
}
