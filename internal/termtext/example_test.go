package termtext_test

import (
	"fmt"

	"github.com/etdi-dev/etdi/internal/termtext"
)

func ExampleEscape() {
	fmt.Println(termtext.Escape("get_w\u202eeather\u200b: crème 天気 🚀\nnext line, C:\\tmp"))
	// Output: get_w\u{202E}eather\u{200B}: crème 天気 🚀\nnext line, C:\\tmp
}
