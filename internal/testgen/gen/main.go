package main

import (
	"os"
	"strconv"

	"github.com/etdi-dev/etdi/internal/testgen"
)

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	os.WriteFile(os.Args[2], testgen.Manifest(n), 0o644)
	os.WriteFile(os.Args[3], testgen.ToolsList(n), 0o644)
}
