// Command stdout is a hostile fixture: its Validate writes to standard output (and error)
// forever, so the host must cap the module's log and end the call at its deadline.
package main

import (
	"fmt"
	"os"

	"strategyhost.dev/examples/hostile/widget"
	"strategyhost.dev/sdk"
)

type chatterbox struct{}

func (chatterbox) Validate(*sdk.Context, *map[string]any) []sdk.FieldError {
	for i := 0; ; i++ {
		fmt.Println("hostile-go-stdout: line", i)
		fmt.Fprintf(os.Stdout, "hostile-go-stdout: partial line %d without a newline, ", i)
		fmt.Fprintln(os.Stderr, "hostile-go-stdout: to stderr", i)
	}
}

func init() { widget.Register("stdout", chatterbox{}) }

func main() {}
