-- varint.lua: varint.pna in Lua (LuaJIT): the sum of the LEB128 varints filling region
-- `varints`, mod 2^64, on uint64_t cdata.
local band, bor, lshift = bit.band, bit.bor, bit.lshift
return { regions = { "varints" }, run = function(r)
	local p, n, i, s = r.varints, r.varints_len, 0, 0ULL
	while i < n do
		local v, sh, b = 0ULL, 0
		repeat
			b = p[i]
			i = i + 1
			v = bor(v, lshift(band(b, 127) + 0ULL, sh % 64))
			sh = sh + 7
		until b < 128
		s = s + v
	end
	return s
end }
