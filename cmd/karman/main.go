package main

import (
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/spf13/cobra"
)

func main() {}
