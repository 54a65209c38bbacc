// Command spin is a hostile fixture: its Validate starts a goroutine that spins forever, then
// spins itself, so only the host's deadline ends the call.
package main

import (
	"strategyhost.dev/examples/hostile/widget"
	"strategyhost.dev/sdk"
)

type spinner struct{}

// spins is written by the loops so they are not empty.
var spins uint64

func (spinner) Validate(*sdk.Context, *map[string]any) []sdk.FieldError {
	go func() {
		for {
			spins++
		}
	}()
	for {
		spins++
	}
}

func init() { widget.Register("spin", spinner{}) }

func main() {}
