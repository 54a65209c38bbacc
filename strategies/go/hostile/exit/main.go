// Command exit is a hostile fixture: its Validate calls os.Exit, which reaches the host as
// WASI's proc_exit; the host ends the call as a trap and never reuses the instance.
package main

import (
	"os"

	"strategyhost.dev/examples/hostile/widget"
	"strategyhost.dev/sdk"
)

type exiter struct{}

func (exiter) Validate(*sdk.Context, *map[string]any) []sdk.FieldError {
	os.Exit(3)
	return nil
}

func init() { widget.Register("exit", exiter{}) }

func main() {}
