-- isum.lua: isum.pna in Lua (LuaJIT): sum of (i * i) % 7 for i in [0, n), mod 2^64.  i * i
-- passes 2^53, so the arithmetic is on uint64_t cdata, exact as in C.
return { regions = {}, run = function(r, n)
	local s, i, un = 0ULL, 0ULL, n + 0ULL
	while i < un do
		s = s + (i * i) % 7
		i = i + 1
	end
	return s
end }
