// Command panic is a hostile fixture: its Validate panics. The SDK recovers the panic, logs it
// and answers Response.error "panic: hostile-go-panic: Validate panicked", so the host fails
// the request.
package main

import (
	"strategyhost.dev/examples/hostile/widget"
	"strategyhost.dev/sdk"
)

type panicker struct{}

func (panicker) Validate(*sdk.Context, *map[string]any) []sdk.FieldError {
	panic("hostile-go-panic: Validate panicked")
}

func init() { widget.Register("panic", panicker{}) }

func main() {}
