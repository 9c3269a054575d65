package apicheck_test

import (
	"testing"

	"tvsm/internal/testkit/apicheck"
)

// The documents load, are valid OpenAPI 3.1 and compile.
func TestLoad(t *testing.T) {
	if _, err := apicheck.Load(); err != nil {
		t.Fatal(err)
	}
}
