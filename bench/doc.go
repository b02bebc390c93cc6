// Package bench holds the bpfbench benchmark families. Run them as root:
//
//	go test -exec sudo -run '^$' -bench . ./bench
//
// The output is Go benchmark format: configuration lines that say which
// kernel, CPU and mitigations produced it, then one line per variant, named
// by /key=value pairs so benchstat can slice it.
package bench
