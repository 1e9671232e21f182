// otlp-sink: an OTLP/HTTP trace receiver for the tests, on the OpenTelemetry Collector's own wire
// codec (go.opentelemetry.io/collector/pdata). It accepts POST /v1/traces in protobuf or JSON,
// exactly as a Collector's otlpreceiver decodes them (a request it cannot decode is refused with
// 400, as the Collector would), and appends one JSON line per span to the file named by -out:
//
//	{"traceId":…,"spanId":…,"parentSpanId":…,"name":…,"kind":…,"service":…,"attributes":{…}}
//
// Usage: otlp-sink -listen 127.0.0.1:0 -out spans.jsonl   (prints "listening on <addr>" once ready)
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

type line struct {
	TraceID      string         `json:"traceId"`
	SpanID       string         `json:"spanId"`
	ParentSpanID string         `json:"parentSpanId"`
	Name         string         `json:"name"`
	Kind         string         `json:"kind"`
	Service      string         `json:"service"`
	Attributes   map[string]any `json:"attributes"`
}

func main() {
	listen := flag.String("listen", "127.0.0.1:4318", "address to listen on")
	out := flag.String("out", "spans.jsonl", "file the spans are appended to")
	flag.Parse()

	file, err := os.OpenFile(*out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	var mu sync.Mutex
	http.HandleFunc("/v1/traces", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := ptraceotlp.NewExportRequest()
		isJSON := strings.HasPrefix(r.Header.Get("Content-Type"), "application/json")
		if isJSON {
			err = req.UnmarshalJSON(body)
		} else {
			err = req.UnmarshalProto(body)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		err = write(file, req.Traces())
		mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		resp := ptraceotlp.NewExportResponse()
		var answer []byte
		if isJSON {
			answer, _ = resp.MarshalJSON()
			w.Header().Set("Content-Type", "application/json")
		} else {
			answer, _ = resp.MarshalProto()
			w.Header().Set("Content-Type", "application/x-protobuf")
		}
		_, _ = w.Write(answer)
	})
	listener, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on %s\n", listener.Addr())
	log.Fatal(http.Serve(listener, nil))
}

func write(file *os.File, traces ptrace.Traces) error {
	encoder := json.NewEncoder(file)
	for i := 0; i < traces.ResourceSpans().Len(); i++ {
		rs := traces.ResourceSpans().At(i)
		service := ""
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
			service = v.AsString()
		}
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			spans := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				s := spans.At(k)
				parent := ""
				if !s.ParentSpanID().IsEmpty() {
					parent = s.ParentSpanID().String()
				}
				if err := encoder.Encode(line{
					TraceID:      s.TraceID().String(),
					SpanID:       s.SpanID().String(),
					ParentSpanID: parent,
					Name:         s.Name(),
					Kind:         s.Kind().String(),
					Service:      service,
					Attributes:   s.Attributes().AsRaw(),
				}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
