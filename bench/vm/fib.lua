-- fib.lua: fib.c in Lua (LuaJIT): the doubly recursive Fibonacci function.
local function fib(n)
	if n < 2 then return n end
	return fib(n - 1) + fib(n - 2)
end
return { regions = {}, run = function(r, n) return fib(n) end }
