-- bitmap.lua: bitmap.c in Lua (LuaJIT): the sum of the indexes of the set bits of region
-- `bits` (u64 words).  Lua has no count-trailing-zeros: the lowest set bit is found with a
-- de Bruijn multiply and a table, on uint64_t cdata.
local ffi = require("ffi")
local band, rshift = bit.band, bit.rshift
local debruijn = 0x03f79d71b4ca8b09ULL
local pos = {}
for k = 0, 63 do pos[tonumber(rshift(debruijn * bit.lshift(1ULL, k), 58))] = k end
return { regions = { "bits" }, run = function(r)
	local w64 = ffi.cast("const uint64_t *", r.bits)
	local s = 0
	for i = 0, r.bits_len / 8 - 1 do
		local w = w64[i]
		while w ~= 0ULL do
			local low = band(w, -w)
			s = s + i * 64 + pos[tonumber(rshift(low * debruijn, 58))]
			w = w - low
		end
	end
	return s
end }
