#!/bin/sh
# gen_data.sh DIR: write the differential test's input files into DIR (deterministic).
#   empty, one-line files, text with and without a final newline, CRLF lines, NUL bytes
#   (binary), a very long line, words and punctuation for -w/-i/\b, a -z style file.
set -e
d=$1
mkdir -p "$d"
: > "$d/empty"
printf 'hello world\nfoo bar baz\nHello World\nabc abcabc\n\nfoo_bar foo-bar\nthe end' > "$d/nonl"
printf 'alpha\nbeta\ngamma\ndelta\nepsilon\nzeta\neta\ntheta\niota\nkappa\nlambda\nmu\n' > "$d/greek"
printf 'line one\r\nline two\r\nfoo\r\n\r\nbar baz\r\n' > "$d/crlf"
printf 'text before\nabc\0def\nfoo bar\n\0\nlast abc\n' > "$d/binary"
printf 'foo\0bar\0abc def\0\0hello\0' > "$d/nuls"
awk 'BEGIN { s = ""; for (i = 0; i < 20000; i++) s = s "abcdefghij"; print "start"; print s "needle" s; print "end" }' > "$d/long"
awk 'BEGIN { srand(7); w = "the cat sat on a mat with foo bar and baz qux x1 y_2 Foo BAR abc aaa ab a-b a.b [x] (y) {z} \\\\ * + ? ^ $ |"; n = split(w, ws, " ");
  for (i = 0; i < 300; i++) { l = ""; k = int(rand() * 8); for (j = 0; j < k; j++) l = l (j ? " " : "") ws[int(rand() * n) + 1]; print l } }' > "$d/words"
printf 'aaa\nabab\nabcabc\nxyzxyz\nabba\naa bb aa\nfoofoo barbar\n' > "$d/rep"
printf 'one\0two words\0three\nfour\0' > "$d/zdata"
