module harness/third_party/chromalexers

go 1.25

require (
	github.com/alecthomas/chroma/v2 v2.27.0
	github.com/dlclark/regexp2/v2 v2.2.1
)
