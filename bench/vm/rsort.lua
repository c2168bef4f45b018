-- rsort.lua: rsort.c in Lua (LuaJIT): each run of SORT_RUN = 64 records (u32 key, u32 value)
-- of region `recs`, copied to a scratch array and insertion-sorted by key (stable); the
-- checksum s = (s * 31 + value) mod 2^32 over the sorted runs.
local ffi = require("ffi")
local SORT_RUN = 64
return { regions = { "recs" }, run = function(r)
	local rec = ffi.cast("const uint32_t *", r.recs)
	local buf = ffi.new("uint32_t[?]", 2 * SORT_RUN)
	local s = 0
	for base = 0, r.recs_len / 4 - 1, 2 * SORT_RUN do
		ffi.copy(buf, rec + base, 8 * SORT_RUN)
		for i = 1, SORT_RUN - 1 do
			local key, val, j = buf[2 * i], buf[2 * i + 1], i
			while j > 0 and buf[2 * j - 2] > key do
				buf[2 * j], buf[2 * j + 1] = buf[2 * j - 2], buf[2 * j - 1]
				j = j - 1
			end
			buf[2 * j], buf[2 * j + 1] = key, val
		end
		for i = 0, SORT_RUN - 1 do
			s = (s * 31 + buf[2 * i + 1]) % 4294967296
		end
	end
	return s
end }
