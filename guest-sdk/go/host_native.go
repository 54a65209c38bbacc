//go:build !wasip1

package sdk

import (
	"fmt"
	"sort"
	"sync"

	"strategyhost.dev/sdk/abi"
)

// The native stand-in for the host (not built for wasip1), for a strategy's tests: what was
// logged and applied, objects for Get and List to find, and errors to answer instead. It is
// one per process, so tests that use it should not run in parallel.

type objectKey struct{ group, plural, namespace, name string }

var recorder struct {
	sync.Mutex
	logs    []LogLine
	applied []map[string]any
	objects map[objectKey][]byte
	errors  map[HostFunction]string
}

// TakeLogs takes the lines logged so far (native builds only).
func TakeLogs() []LogLine {
	recorder.Lock()
	defer recorder.Unlock()
	logs := recorder.logs
	recorder.logs = nil
	return logs
}

// TakeApplied takes the objects passed to Apply so far (native builds only).
func TakeApplied() []map[string]any {
	recorder.Lock()
	defer recorder.Unlock()
	applied := recorder.applied
	recorder.applied = nil
	return applied
}

// PutObject makes an object visible to Get and List (native builds only). It panics when obj
// does not encode as JSON.
func PutObject(group, plural, namespace, name string, obj any) {
	data, err := EncodeJSON(obj)
	if err != nil {
		panic(fmt.Sprintf("sdk.PutObject: %v", err))
	}
	recorder.Lock()
	defer recorder.Unlock()
	if recorder.objects == nil {
		recorder.objects = map[objectKey][]byte{}
	}
	recorder.objects[objectKey{group, plural, namespace, name}] = data
}

// SetHostError makes a host function (HostGet, HostList or HostApply) answer with reason as
// its error, as the host does when it refuses, until ResetHost (native builds only).
func SetHostError(fn HostFunction, reason string) {
	recorder.Lock()
	defer recorder.Unlock()
	if recorder.errors == nil {
		recorder.errors = map[HostFunction]string{}
	}
	recorder.errors[fn] = reason
}

// ResetHost forgets every log line, applied object, object put and error set (native builds
// only).
func ResetHost() {
	recorder.Lock()
	defer recorder.Unlock()
	recorder.logs, recorder.applied, recorder.objects, recorder.errors = nil, nil, nil, nil
}

func hostLog(level LogLevel, message string) {
	recorder.Lock()
	defer recorder.Unlock()
	recorder.logs = append(recorder.logs, LogLine{level, message})
}

func hostGet(request []byte) []byte   { return hostCall(HostGet, request) }
func hostList(request []byte) []byte  { return hostCall(HostList, request) }
func hostApply(request []byte) []byte { return hostCall(HostApply, request) }

// hostCall answers an encoded request as the host would: decodes it, answers from the
// recorder, encodes the answer.
func hostCall(fn HostFunction, request []byte) []byte {
	recorder.Lock()
	defer recorder.Unlock()
	reason := recorder.errors[fn]
	switch fn {
	case HostGet:
		var req abi.GetRequest
		if err := req.Unmarshal(request); err != nil {
			reason = "request did not decode: " + err.Error()
		}
		obj, found := recorder.objects[objectKey{req.Group, req.Plural, req.Namespace, req.Name}]
		if reason != "" {
			obj, found = nil, false
		}
		return (&abi.GetResponse{Found: found, Object: obj, Error: reason}).Marshal()
	case HostList:
		var req abi.ListRequest
		if err := req.Unmarshal(request); err != nil {
			reason = "request did not decode: " + err.Error()
		}
		// As the Rust SDK's stand-in: by group, plural and namespace ("" for all), in key
		// order; the label selector is not evaluated.
		var keys []objectKey
		for k := range recorder.objects {
			if k.group == req.Group && k.plural == req.Plural && (req.Namespace == "" || k.namespace == req.Namespace) {
				keys = append(keys, k)
			}
		}
		sort.Slice(keys, func(i, j int) bool {
			a, b := keys[i], keys[j]
			return a.namespace < b.namespace || a.namespace == b.namespace && a.name < b.name
		})
		resp := abi.ListResponse{Error: reason}
		for _, k := range keys {
			if reason == "" {
				resp.Items = append(resp.Items, recorder.objects[k])
			}
		}
		return resp.Marshal()
	case HostApply:
		var req abi.ApplyRequest
		if err := req.Unmarshal(request); err != nil {
			reason = "request did not decode: " + err.Error()
		}
		if reason != "" {
			return (&abi.ApplyResponse{Error: reason}).Marshal()
		}
		var obj map[string]any
		if err := DecodeJSON(req.Object, &obj); err != nil {
			return (&abi.ApplyResponse{Error: err.Error()}).Marshal()
		}
		recorder.applied = append(recorder.applied, obj)
		return (&abi.ApplyResponse{Object: req.Object}).Marshal()
	}
	panic(fmt.Sprintf("sdk: no host function %v", fn))
}
