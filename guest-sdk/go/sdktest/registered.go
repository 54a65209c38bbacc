package sdktest

import "strategyhost.dev/sdk"

// The harness of the registered strategy, as package-level functions.

// Create runs the create phase on obj (see Harness.Create).
func Create(obj any) (map[string]any, []sdk.FieldError, []string, error) {
	return Registered().Create(obj)
}

// Update runs the update phase on newObj over old (see Harness.Update).
func Update(newObj, old any) (map[string]any, []sdk.FieldError, []string, error) {
	return Registered().Update(newObj, old)
}

// Delete runs BeforeDelete on obj.
func Delete(obj any) ([]sdk.FieldError, error) { return Registered().Delete(obj) }

// AfterCreate runs the AfterCreate hook on obj.
func AfterCreate(obj any) error { return Registered().AfterCreate(obj) }

// AfterUpdate runs the AfterUpdate hook.
func AfterUpdate(newObj, old any) error { return Registered().AfterUpdate(newObj, old) }

// AfterDelete runs the AfterDelete hook on obj.
func AfterDelete(obj any) error { return Registered().AfterDelete(obj) }

// Convert converts objects to desiredAPIVersion.
func Convert(desiredAPIVersion string, objs ...any) ([]map[string]any, error) {
	return Registered().Convert(desiredAPIVersion, objs...)
}

// Mutate runs the registered policy's mutating phase (see Harness.Mutate).
func Mutate(w Write) (map[string]any, error) { return Registered().Mutate(w) }

// Admit runs the registered policy's validating phase (see Harness.Admit).
func Admit(w Write) ([]sdk.FieldError, []string, error) { return Registered().Admit(w) }

// RoundTrip checks obj converts to via and back unchanged (see Harness.RoundTrip).
func RoundTrip(obj any, via string) error { return Registered().RoundTrip(obj, via) }

// The native host's recorder (see package sdk's native host functions).

// TakeLogs takes the lines logged so far.
func TakeLogs() []sdk.LogLine { return sdk.TakeLogs() }

// TakeApplied takes the objects applied so far.
func TakeApplied() []map[string]any { return sdk.TakeApplied() }

// PutObject makes an object visible to sdk.Get and sdk.List.
func PutObject(group, plural, namespace, name string, obj any) {
	sdk.PutObject(group, plural, namespace, name, obj)
}

// SetHostError makes a host function answer with reason as its error until ResetHost.
func SetHostError(fn sdk.HostFunction, reason string) { sdk.SetHostError(fn, reason) }

// ResetHost forgets everything the recorder holds.
func ResetHost() { sdk.ResetHost() }
