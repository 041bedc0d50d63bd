// SPDX-License-Identifier: GPL-2.0
// A bare crypto/tls client for tools/tls/capture-hellos.sh: dial ADDR with SNI NAME, default config.
package main

import (
	"crypto/tls"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: tlsdial ADDR:PORT SERVERNAME")
		os.Exit(2)
	}
	conn, err := tls.Dial("tcp", os.Args[1], &tls.Config{ServerName: os.Args[2]})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	conn.Close()
}
