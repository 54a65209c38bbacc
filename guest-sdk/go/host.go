package sdk

import (
	"errors"
	"fmt"
	"strconv"

	"strategyhost.dev/sdk/abi"
)

// The host functions a strategy can call: Log (always granted), and Get, List and Apply when
// Strategy.HostFunctions asks for them. Built for wasip1 they call the imports of module
// "strategy-host"; built natively they answer from an in-process recorder that tests read and
// preset (TakeLogs, TakeApplied, PutObject, SetHostError, ResetHost, or package sdktest).
// Both go through the same encoded messages.

// LogLevel is the severity of a log line.
type LogLevel int32

// The log levels.
const (
	LevelError LogLevel = 1
	LevelWarn  LogLevel = 2
	LevelInfo  LogLevel = 3
	LevelDebug LogLevel = 4
)

func (l LogLevel) String() string {
	switch l {
	case LevelError:
		return "Error"
	case LevelWarn:
		return "Warn"
	case LevelInfo:
		return "Info"
	case LevelDebug:
		return "Debug"
	}
	return strconv.Itoa(int(l))
}

// LogLine is one line logged through Log, as the native recorder keeps it (TakeLogs).
type LogLine struct {
	Level   LogLevel
	Message string
}

// Log writes one line into the host's log, tagged with the module's name and the request's id.
func Log(level LogLevel, message string) { hostLog(level, message) }

// Error logs at LevelError.
func Error(message string) { Log(LevelError, message) }

// Warn logs at LevelWarn.
func Warn(message string) { Log(LevelWarn, message) }

// Info logs at LevelInfo.
func Info(message string) { Log(LevelInfo, message) }

// Debug logs at LevelDebug.
func Debug(message string) { Log(LevelDebug, message) }

// Get reads one object (from the host's cache): found is false when it does not exist. The
// core group is "", a cluster-scoped object's namespace "". Needs HostGet.
func Get(group, plural, namespace, name string) (obj map[string]any, found bool, err error) {
	var resp abi.GetResponse
	req := abi.GetRequest{Group: group, Plural: plural, Namespace: namespace, Name: name}
	if err := exchange(hostGet, &req, &resp); err != nil {
		return nil, false, err
	}
	if resp.Error != "" {
		return nil, false, errors.New(resp.Error)
	}
	if !resp.Found {
		return nil, false, nil
	}
	if err := DecodeJSON(resp.Object, &obj); err != nil {
		return nil, false, err
	}
	return obj, true, nil
}

// List lists objects of a resource, in one namespace (or all, with "") and matching a label
// selector ("" for all). Needs HostList.
func List(group, plural, namespace, labelSelector string) ([]map[string]any, error) {
	var resp abi.ListResponse
	req := abi.ListRequest{Group: group, Plural: plural, Namespace: namespace, LabelSelector: labelSelector}
	if err := exchange(hostList, &req, &resp); err != nil {
		return nil, err
	}
	if resp.Error != "" {
		return nil, errors.New(resp.Error)
	}
	items := make([]map[string]any, len(resp.Items))
	for i, item := range resp.Items {
		if err := DecodeJSON(item, &items[i]); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// Apply server-side applies another object (identified by its apiVersion, kind, namespace and
// name) through the host's registry, with that resource's own strategy: the module is the
// field manager and applies with force, as a controller does. It returns the object as stored.
// Only After hooks may call it; it needs HostApply and the object's group and kind in
// Strategy.Applies.
func Apply(obj any) (map[string]any, error) {
	data, err := EncodeJSON(obj)
	if err != nil {
		return nil, err
	}
	var resp abi.ApplyResponse
	if err := exchange(hostApply, &abi.ApplyRequest{Object: data}, &resp); err != nil {
		return nil, err
	}
	if resp.Error != "" {
		return nil, errors.New(resp.Error)
	}
	var stored map[string]any
	if err := DecodeJSON(resp.Object, &stored); err != nil {
		return nil, err
	}
	return stored, nil
}

// exchange sends an encoded request to a host function and decodes its answer. Each host
// function has its own transport (hostGet, hostList, hostApply), so a module imports only the
// functions its code calls: the host refuses a module importing one it was not granted.
func exchange(transport func([]byte) []byte, req interface{ Marshal() []byte }, resp interface{ Unmarshal([]byte) error }) error {
	answer := transport(req.Marshal())
	if err := resp.Unmarshal(answer); err != nil {
		return fmt.Errorf("host answer did not decode: %v", err)
	}
	return nil
}
