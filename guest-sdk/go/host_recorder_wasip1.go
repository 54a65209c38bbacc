//go:build wasip1

package sdk

// The native recorder's functions exist in wasip1 builds too, so tests and tools that use them
// compile (and vet) for every target; in a module they panic, and the linker leaves them out
// of modules that do not call them.

const recorderOnlyNatively = "sdk: the host recorder exists only in native builds (go test)"

// TakeLogs panics: the recorder exists only in native builds.
func TakeLogs() []LogLine { panic(recorderOnlyNatively) }

// TakeApplied panics: the recorder exists only in native builds.
func TakeApplied() []map[string]any { panic(recorderOnlyNatively) }

// PutObject panics: the recorder exists only in native builds.
func PutObject(group, plural, namespace, name string, obj any) { panic(recorderOnlyNatively) }

// SetHostError panics: the recorder exists only in native builds.
func SetHostError(fn HostFunction, reason string) { panic(recorderOnlyNatively) }

// ResetHost panics: the recorder exists only in native builds.
func ResetHost() { panic(recorderOnlyNatively) }
