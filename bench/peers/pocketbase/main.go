// The PocketBase peer of bench/data-crud.ts: PocketBase as a Go framework with nothing added
// (the same as its examples/base without the JS hooks and migrations), built by
// bench/peers/pocketbase.sh into .cache/.
package main

import (
	"log"

	"github.com/pocketbase/pocketbase"
)

func main() {
	app := pocketbase.New()
	if err := app.Start(); err != nil {
		log.Fatal(err)
	}
}
