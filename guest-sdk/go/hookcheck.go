//go:build !wasip1

package sdk

// The hook signature check, run natively (go test, sdktest) and not in the wasm module: looking
// methods up by name (reflect's MethodByName and Method) makes Go's linker keep every exported
// method of every type the module can reach, about 1 MB of a 5-6 MB module. A typo'd hook
// therefore fails the strategy's `go test`, where sdktest builds its handler.

import (
	"fmt"
	"reflect"
	"strings"
)

// checkHooks panics when impl has a method of a hook's name that does not implement the hook.
func checkHooks(impl any, hooks []reflect.Type) {
	if impl == nil {
		return
	}
	t := reflect.TypeOf(impl)
	for _, hook := range hooks {
		want := hook.Method(0)
		signature := want.Name + strings.TrimPrefix(want.Type.String(), "func")
		if m, ok := t.MethodByName(want.Name); ok {
			if !t.Implements(hook) {
				panic(fmt.Sprintf("sdk: %v has %s of type %v, which is not the hook %s", t, want.Name, m.Type, signature))
			}
		} else if _, ok := reflect.PointerTo(t).MethodByName(want.Name); ok && t.Kind() != reflect.Pointer {
			panic(fmt.Sprintf("sdk: %v's %s has a pointer receiver: pass a pointer as Impl", t, want.Name))
		}
	}
}
