package sdk_test

import (
	"encoding/json"
	"fmt"
)

func jsonNumber(s string) json.Number { return json.Number(s) }

func fmtValue(v any) string { return fmt.Sprint(v) }
